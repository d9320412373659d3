import fs from 'node:fs';
import path from 'node:path';
import type Docker from 'dockerode';

/** Host pids of every process in a running container (`docker top`). */
export async function containerPids(docker: Docker, containerId: string): Promise<number[]> {
  const top = (await docker.getContainer(containerId).top()) as { Titles: string[]; Processes: string[][] };
  const column = top.Titles.indexOf('PID');
  return top.Processes.map((p) => Number(p[column]));
}

const CHUNK = 8 * 1024 * 1024;

/**
 * Whether a process's readable memory holds `needle` (as one-byte text or UTF-16, V8's two string forms),
 * read from the host through /proc/<pid>/mem (root). Regions that cannot be read are skipped.
 */
export function memoryHolds(pid: number, needle: string): boolean {
  const forms = [Buffer.from(needle, 'latin1'), Buffer.from(needle, 'utf16le')];
  const overlap = Math.max(...forms.map((f) => f.length)) - 1;
  let maps: string;
  let fd: number;
  try {
    maps = fs.readFileSync(`/proc/${pid}/maps`, 'utf8');
    fd = fs.openSync(`/proc/${pid}/mem`, 'r');
  } catch {
    return false;
  }
  const buffer = Buffer.alloc(CHUNK + overlap);
  try {
    for (const line of maps.split('\n')) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) r/.exec(line);
      if (!m || line.endsWith('[vvar]') || line.endsWith('[vsyscall]')) continue;
      const start = Number.parseInt(m[1] ?? '0', 16);
      const end = Number.parseInt(m[2] ?? '0', 16);
      for (let at = start; at < end; at += CHUNK) {
        let read: number;
        try {
          read = fs.readSync(fd, buffer, 0, Math.min(CHUNK + overlap, end - at), at);
        } catch {
          break;
        }
        const view = buffer.subarray(0, read);
        if (forms.some((f) => view.includes(f))) return true;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return false;
}

/** Regular files under `root` whose bytes hold `needle` (symlinks not followed; unreadable entries skipped). */
export function filesHolding(root: string, needle: string, limit = 20_000): string[] {
  const found: string[] = [];
  let seen = 0;
  const walk = (dir: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (++seen > limit) return;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) {
        try {
          if (fs.readFileSync(full).includes(needle)) found.push(full);
        } catch {
          // vanished or unreadable
        }
      }
    }
  };
  walk(root);
  return found;
}
