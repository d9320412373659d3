import crypto from 'node:crypto';
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { viaFd, type RootChecks } from './guarded-checks.ts';
import type { RootOpeners } from './guarded-open.ts';

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;

/**
 * What a guarded root makes, writes and removes: always by a name inside a folder opened and checked
 * first (`/proc/self/fd/<dirfd>/<name>`), never by a path whose folders could be swapped meanwhile.
 */
export function createGuardedWrites(checks: RootChecks, openers: RootOpeners) {
  const { refuse, relative, openProblem } = checks;
  const { openParent, makeDirs } = openers;

  async function mkdirp(relPath: string, options: { mode?: number } = {}): Promise<void> {
    await (await makeDirs(relative(relPath), options.mode ?? 0o755)).close();
  }

  async function writeFileAtomic(
    relPath: string,
    data: Uint8Array,
    options: { mode?: number; dirMode?: number } = {},
  ): Promise<void> {
    const rel = relative(relPath);
    if (rel === '') throw refuse('escapes-root', relPath, 'is the folder itself');
    const name = path.posix.basename(rel);
    const dir = await makeDirs(path.posix.dirname(rel).replace(/^\.$/, ''), options.dirMode ?? 0o755);
    const tmp = viaFd(dir.fd, `${name}.${crypto.randomBytes(6).toString('hex')}.part`);
    try {
      const file = await fs.open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, options.mode ?? 0o644);
      try {
        await file.writeFile(data);
      } finally {
        await file.close();
      }
      await fs.rename(tmp, viaFd(dir.fd, name)).catch(async (error: unknown) => {
        await fs.unlink(tmp).catch(() => undefined);
        throw error;
      });
    } finally {
      await dir.close();
    }
  }

  async function remove(relPath: string): Promise<void> {
    const { dir, name } = await openParent(relPath);
    try {
      const entry = viaFd(dir.fd, name);
      const stats = await fs.lstat(entry).catch((error: unknown) => {
        throw openProblem(error, relPath);
      });
      await (stats.isDirectory() ? fs.rmdir(entry) : fs.unlink(entry));
    } finally {
      await dir.close();
    }
  }

  return { mkdirp, writeFileAtomic, remove };
}
