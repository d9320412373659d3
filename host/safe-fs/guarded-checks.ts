import fsSync, { constants } from 'node:fs';
import path from 'node:path';
import { errorCode } from '../errors/error-code.ts';
import { GuardedPathError, type GuardedPathProblem } from './guarded-path-error.ts';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
/** O_NONBLOCK: a FIFO planted under the name opens at once (and is refused by fstat) instead of hanging. */
export const FILE_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
export const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
/** What the kernel appends to a descriptor's path once the name it was opened by is gone. */
const DELETED = ' (deleted)';

/** The name that resolves through an open descriptor (and then `name` inside the folder it holds). */
export function viaFd(fd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`;
}

/**
 * The checks of one guarded root: a path by its spelling before it is opened, and a descriptor by what the
 * kernel says it holds after. Each refusal is a GuardedPathError naming the root by `label`.
 */
export function createRootChecks(root: string, label: string) {
  const inside = root === '/' ? '/' : `${root}/`;

  const refuse = (problem: GuardedPathProblem, relPath: string, what: string): GuardedPathError =>
    new GuardedPathError(problem, relPath, `${relPath || '.'} in ${label} ${what}`);

  /** `relPath` made canonical and relative ("" is the root); a path that leaves the root by its spelling is refused. */
  function relative(relPath: string): string {
    if (path.isAbsolute(relPath)) throw refuse('escapes-root', relPath, 'is not a relative path');
    const full = path.resolve(root, relPath);
    if (full !== root && !full.startsWith(inside))
      throw refuse('escapes-root', relPath, 'leads out of the folder');
    return path.relative(root, full).split(path.sep).join('/');
  }

  function absolute(rel: string): string {
    return rel === '' ? root : `${inside}${rel}`;
  }

  /** `opened` is the name the failed open used: with O_DIRECTORY a symlink fails as ENOTDIR, told apart by it. */
  function openProblem(error: unknown, relPath: string, opened?: string): Error {
    const code = errorCode(error);
    const symlink = () => refuse('symlink', relPath, 'is a symlink, never followed');
    if (code === 'ENOENT') return refuse('missing', relPath, 'does not exist');
    if (code === 'ELOOP') return symlink();
    if (code === 'ENOTDIR' && opened && fsSync.lstatSync(opened, { throwIfNoEntry: false })?.isSymbolicLink())
      return symlink();
    if (code === 'ENOTDIR') return refuse('not-directory', relPath, 'is not in a folder, or is not a folder');
    return error instanceof Error ? error : new Error(String(error));
  }

  /** Refuses a descriptor whose real file lies outside the root, however the path's folders led there. */
  function checkReal(real: string, relPath: string): string {
    if (real !== root && !real.startsWith(inside))
      throw refuse('escapes-root', relPath, 'leads outside the folder');
    return real;
  }

  /** A regular file with one name (fstat, read before `checkOneName`). */
  function checkFile(stats: fsSync.Stats, relPath: string): void {
    if (!stats.isFile()) throw refuse('not-regular', relPath, 'is not a regular file');
    if (stats.nlink !== 1)
      throw refuse('linked', relPath, `has ${stats.nlink} names (a hard link); copy it instead`);
  }

  /**
   * The descriptor's path, read after its fstat: a file with one name whose name was still the one opened
   * (not "(deleted)") after the count is a file of the root. Read the other way round, a hard link to an
   * outside file, removed between the two, passes both (the outside file is left with one name).
   */
  function checkOneName(realPath: string, relPath: string): string {
    if (realPath.endsWith(DELETED))
      throw refuse('linked', relPath, 'was removed or replaced while it was opened');
    return realPath;
  }

  return { root, refuse, relative, absolute, openProblem, checkReal, checkFile, checkOneName };
}

export type RootChecks = ReturnType<typeof createRootChecks>;
