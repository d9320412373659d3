/**
 * Disk quotas of a group's folders on the host's disk. Commands get RLIMIT_FSIZE (no single file grows
 * past the group quota, set on the container), and while a run lasts its group and session folders are
 * measured every few seconds: a run whose folder is over its quota is stopped and its group told. The
 * measurement walks the folder asynchronously (blocks actually allocated, so sparse files count for what
 * they hold) and counts entries too: a folder of millions of empty files is over quota as well.
 */
import fs from 'node:fs/promises';
import path from 'node:path';

export interface QuotaFolder {
  /** "group folder", "session folder": how the group is told. */
  label: string;
  path: string;
  limitBytes: number;
}

export interface FolderUsage {
  bytes: number;
  entries: number;
}

/** More entries than this in one folder is over quota whatever their size (and bounds the walk). */
export const MAX_ENTRIES = 100_000;

/** Allocated bytes and entry count under `dir` (symlinks not followed); stops counting at `maxEntries`. */
export async function folderUsage(dir: string, maxEntries = MAX_ENTRIES): Promise<FolderUsage> {
  const usage: FolderUsage = { bytes: 0, entries: 0 };
  const pending = [dir];
  for (let current = pending.pop(); current !== undefined; current = pending.pop()) {
    let names: string[];
    try {
      names = await fs.readdir(current);
    } catch {
      continue; // removed meanwhile, or not a directory
    }
    for (const name of names) {
      if (++usage.entries > maxEntries) return usage;
      const full = path.join(current, name);
      const stat = await fs.lstat(full).catch(() => null);
      if (stat === null) continue;
      usage.bytes += stat.blocks * 512;
      if (stat.isDirectory()) pending.push(full);
    }
  }
  return usage;
}

const MB = 1024 * 1024;

/** Why `folder` is over its quota, or null. */
export async function quotaProblem(folder: QuotaFolder): Promise<string | null> {
  const usage = await folderUsage(folder.path);
  if (usage.entries > MAX_ENTRIES)
    return `the ${folder.label} holds more than ${MAX_ENTRIES} files; delete some to make room`;
  if (usage.bytes <= folder.limitBytes) return null;
  return (
    `the ${folder.label} holds ${(usage.bytes / MB).toFixed(1)} MB, over its quota of ` +
    `${(folder.limitBytes / MB).toFixed(0)} MB; delete files to make room`
  );
}

/**
 * Checks the folders at once and then every `intervalMs` until disposed; the first problem found calls
 * `stop` (once). Returns the disposer. Checks never overlap.
 */
export function watchDiskQuota(
  folders: readonly QuotaFolder[],
  intervalMs: number,
  stop: (reason: string) => void,
): () => void {
  let disposed = false;
  let timer: NodeJS.Timeout | undefined;
  const check = async (): Promise<void> => {
    for (const folder of folders) {
      const problem = await quotaProblem(folder);
      if (disposed) return;
      if (problem !== null) {
        disposed = true;
        stop(`disk quota: ${problem}`);
        return;
      }
    }
    if (!disposed) timer = setTimeout(() => void check(), intervalMs);
  };
  void check();
  return () => {
    disposed = true;
    if (timer) clearTimeout(timer);
  };
}
