import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { viaFd, type RootChecks } from './guarded-checks.ts';
import type { RootOpeners } from './guarded-open.ts';
import { GuardedPathError } from './guarded-path-error.ts';

/** The largest piece read at once; a file is read to its limit plus one byte, never past. */
const READ_CHUNK = 1024 * 1024;

export interface GuardedFile {
  bytes: Buffer;
  /** What the descriptor really was, by the kernel's account (its base name is the file's name). */
  realPath: string;
  stats: fsSync.Stats;
}

export interface GuardedEntry {
  /** Relative to the root, "/"-separated. */
  relPath: string;
  /** The entry itself (a symlink is a symlink, never what it points to). */
  stats: fsSync.Stats;
}

/** What a guarded root reads, stats, lists and watches, each through a checked descriptor (GuardedRoot). */
export function createGuardedReads(checks: RootChecks, openers: RootOpeners) {
  const { refuse, relative, openProblem } = checks;
  const { openDir, withDirSync, openParent, openFile } = openers;

  async function readFile(relPath: string, options: { maxBytes: number }): Promise<GuardedFile> {
    const { handle, stats, realPath } = await openFile(relPath);
    try {
      if (stats.size > options.maxBytes)
        throw refuse('too-large', relPath, `is larger than ${options.maxBytes} bytes`);
      // Read to the limit plus one byte: a file that grew meanwhile is refused, not cut.
      const chunks: Buffer[] = [];
      let total = 0;
      for (;;) {
        const want = Math.min(options.maxBytes + 1 - total, READ_CHUNK);
        if (want <= 0) break;
        const chunk = Buffer.allocUnsafe(want);
        const { bytesRead } = await handle.read(chunk, 0, want, null);
        if (bytesRead === 0) break;
        chunks.push(chunk.subarray(0, bytesRead));
        total += bytesRead;
      }
      if (total > options.maxBytes)
        throw refuse('too-large', relPath, `grew past ${options.maxBytes} bytes while read`);
      return { bytes: Buffer.concat(chunks, total), realPath, stats };
    } finally {
      await handle.close();
    }
  }

  async function copyFileOut(
    relPath: string,
    destination: string,
    options: { mode?: number } = {},
  ): Promise<void> {
    const { handle } = await openFile(relPath);
    try {
      await pipeline(
        handle.createReadStream({ autoClose: false }),
        fsSync.createWriteStream(destination, { flags: 'wx', mode: options.mode ?? 0o600 }),
      );
    } finally {
      await handle.close();
    }
  }

  async function stat(relPath: string): Promise<fsSync.Stats> {
    if (relative(relPath) === '') {
      const dir = await openDir('');
      try {
        return await dir.stat();
      } finally {
        await dir.close();
      }
    }
    const { dir, name } = await openParent(relPath);
    try {
      return await fs.lstat(viaFd(dir.fd, name)).catch((error: unknown) => {
        throw openProblem(error, relPath);
      });
    } finally {
      await dir.close();
    }
  }

  function statSync(relPath: string): fsSync.Stats | null {
    const rel = relative(relPath);
    if (rel === '') return withDirSync('', (fd) => fsSync.fstatSync(fd));
    const name = path.posix.basename(rel);
    try {
      return withDirSync(
        path.posix.dirname(rel).replace(/^\.$/, ''),
        (fd) => fsSync.lstatSync(viaFd(fd, name), { throwIfNoEntry: false }) ?? null,
      );
    } catch (error) {
      if (error instanceof GuardedPathError && error.problem === 'missing') return null;
      throw error;
    }
  }

  function readDirSync(relPath: string): fsSync.Dirent[] {
    return withDirSync(relative(relPath), (fd) => fsSync.readdirSync(viaFd(fd), { withFileTypes: true }));
  }

  async function* walk(options: { descend?(relPath: string): boolean } = {}): AsyncGenerator<GuardedEntry> {
    const pending = [''];
    for (let rel = pending.pop(); rel !== undefined; rel = pending.pop()) {
      // A folder that became a symlink or vanished since it was listed is not the root's to walk.
      const dir = await openDir(rel).catch(() => null);
      if (dir === null) continue;
      try {
        const names = await fs.readdir(viaFd(dir.fd)).catch(() => [] as string[]);
        for (const name of names) {
          const stats = await fs.lstat(viaFd(dir.fd, name)).catch(() => null);
          if (stats === null) continue;
          const child = rel === '' ? name : `${rel}/${name}`;
          yield { relPath: child, stats };
          if (stats.isDirectory() && (options.descend?.(child) ?? true)) pending.push(child);
        }
      } finally {
        await dir.close();
      }
    }
  }

  function watch(relPath: string, listener: (event: string, name: string | null) => void): fsSync.FSWatcher {
    // The watch is on the folder the descriptor holds (inotify keeps the inode, not the name).
    return withDirSync(relative(relPath), (fd) =>
      fsSync.watch(viaFd(fd), { persistent: false }, (event, name) =>
        listener(event, typeof name === 'string' ? name : null),
      ),
    );
  }

  return { readFile, copyFileOut, stat, statSync, readDirSync, walk, watch };
}
