import fsSync from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { errorCode } from '../errors/error-code.ts';
import { DIR_FLAGS, FILE_FLAGS, viaFd, type RootChecks } from './guarded-checks.ts';

/**
 * How a guarded root opens what it works on: a folder or a file by a name that is never followed in its
 * last component, then checked by its descriptor; folders made one component at a time through the one
 * before. Every descriptor returned has passed the checks; the caller closes it.
 */
export function createRootOpeners(checks: RootChecks) {
  const { refuse, relative, absolute, openProblem, checkReal, checkFile, checkOneName } = checks;

  async function openDir(rel: string, relPath = rel): Promise<FileHandle> {
    const handle = await fs.open(absolute(rel), DIR_FLAGS).catch((error: unknown) => {
      throw openProblem(error, relPath, absolute(rel));
    });
    try {
      checkReal(await fs.readlink(viaFd(handle.fd)), relPath);
      return handle;
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  function withDirSync<T>(rel: string, use: (fd: number) => T): T {
    let fd: number;
    try {
      fd = fsSync.openSync(absolute(rel), DIR_FLAGS);
    } catch (error) {
      throw openProblem(error, rel, absolute(rel));
    }
    try {
      checkReal(fsSync.readlinkSync(viaFd(fd)), rel);
      return use(fd);
    } finally {
      fsSync.closeSync(fd);
    }
  }

  /** The entry's folder, opened and checked, and the entry's name in it. */
  async function openParent(relPath: string): Promise<{ dir: FileHandle; name: string }> {
    const rel = relative(relPath);
    if (rel === '') throw refuse('escapes-root', relPath, 'is the folder itself');
    return {
      dir: await openDir(path.posix.dirname(rel).replace(/^\.$/, ''), relPath),
      name: path.posix.basename(rel),
    };
  }

  /** Each folder of `rel` made if missing and opened through the one before it, never by its full name. */
  async function makeDirs(rel: string, mode: number): Promise<FileHandle> {
    let dir = await openDir('');
    let walked = '';
    try {
      for (const part of rel === '' ? [] : rel.split('/')) {
        walked = walked === '' ? part : `${walked}/${part}`;
        await fs.mkdir(viaFd(dir.fd, part), { mode }).catch((error: unknown) => {
          if (errorCode(error) !== 'EEXIST') throw error;
        });
        const next = await fs.open(viaFd(dir.fd, part), DIR_FLAGS).catch((error: unknown) => {
          throw openProblem(error, walked, viaFd(dir.fd, part));
        });
        await dir.close();
        dir = next;
        checkReal(await fs.readlink(viaFd(dir.fd)), walked);
      }
      return dir;
    } catch (error) {
      await dir.close();
      throw error;
    }
  }

  /** A regular file with one name inside the root, opened and checked; the caller closes it. */
  async function openFile(
    relPath: string,
  ): Promise<{ handle: FileHandle; stats: fsSync.Stats; realPath: string }> {
    const handle = await fs.open(absolute(relative(relPath)), FILE_FLAGS).catch((error: unknown) => {
      throw openProblem(error, relPath);
    });
    try {
      const stats = await handle.stat();
      checkFile(stats, relPath);
      const realPath = checkOneName(checkReal(await fs.readlink(viaFd(handle.fd)), relPath), relPath);
      return { handle, stats, realPath };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** `openFile`, synchronous: `use` gets the checked descriptor, closed when it returns. */
  function withFileSync<T>(relPath: string, use: (fd: number, stats: fsSync.Stats) => T): T {
    const rel = relative(relPath);
    let fd: number;
    try {
      fd = fsSync.openSync(absolute(rel), FILE_FLAGS);
    } catch (error) {
      throw openProblem(error, relPath);
    }
    try {
      const stats = fsSync.fstatSync(fd);
      checkFile(stats, relPath);
      checkOneName(checkReal(fsSync.readlinkSync(viaFd(fd)), relPath), relPath);
      return use(fd, stats);
    } finally {
      fsSync.closeSync(fd);
    }
  }

  return { openDir, withDirSync, openParent, makeDirs, openFile, withFileSync };
}

export type RootOpeners = ReturnType<typeof createRootOpeners>;
