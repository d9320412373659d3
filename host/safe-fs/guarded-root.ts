/**
 * The one way the host touches a folder a container can write (a group, session or media folder): open
 * once, check the descriptor, use only the descriptor. A name checked and then used again can be a
 * different file by the time it is used (a running container swaps it for a symlink in between), so every
 * operation here opens without following the last component (`O_NOFOLLOW`), asks the kernel what it really
 * opened (`/proc/self/fd/<fd>`, which names the file the descriptor holds, wherever the path's folders
 * pointed) and refuses anything outside the root, then reads, stats or lists through that descriptor.
 *
 * Node has no `openat`, but a path through `/proc/self/fd/<dirfd>/<name>` resolves `<name>` inside the
 * folder the descriptor holds, not inside whatever the folder's name means now: creating, renaming and
 * removing go through an opened, checked folder that way, and folders are made one component at a time,
 * each opened with `O_DIRECTORY | O_NOFOLLOW` before the next.
 *
 * Linux only (as the host is: Docker, systemd); without /proc every operation fails, closed.
 */
import crypto from 'node:crypto';
import fsSync, { constants } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { errorCode } from '../errors/error-code.ts';
import { GuardedPathError, type GuardedPathProblem } from './guarded-path-error.ts';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK } = constants;
/** O_NONBLOCK: a FIFO planted under the name opens at once (and is refused by fstat) instead of hanging. */
const FILE_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
/** What the kernel appends to a descriptor's path once the name it was opened by is gone. */
const DELETED = ' (deleted)';
/** The largest piece read at once; a file is read to its limit plus one byte, never past. */
const READ_CHUNK = 1024 * 1024;

/** The name that resolves through an open descriptor (and then `name` inside the folder it holds). */
function viaFd(fd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`;
}

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

export interface GuardedRoot {
  /** The root's real path. */
  readonly path: string;
  /** A regular file with one name, at most `maxBytes` long. */
  readFile(relPath: string, options: { maxBytes: number }): Promise<GuardedFile>;
  /**
   * Calls `use` with the descriptor of a regular file with one name inside the root, and its fstat, for an
   * operation this interface has no name for (fchown, fchmod): `use` works on the descriptor, never the name.
   */
  withFileSync<T>(relPath: string, use: (fd: number, stats: fsSync.Stats) => T): T;
  /**
   * Copies a regular file with one name to `destination` (a host-only path, created exclusively) through
   * its descriptor, streamed: for files too large to hold in memory (a backup).
   */
  copyFileOut(relPath: string, destination: string, options?: { mode?: number }): Promise<void>;
  /** The entry at `relPath` itself (lstat), its folder checked first. */
  stat(relPath: string): Promise<fsSync.Stats>;
  /** `stat`, synchronous, for callers whose measurements must not interleave; null when missing. */
  statSync(relPath: string): fsSync.Stats | null;
  /** The names in a folder, read through its checked descriptor. */
  readDirSync(relPath: string): fsSync.Dirent[];
  /** Makes the folders of `relPath` one at a time, each a real folder inside the root. */
  mkdirp(relPath: string, options?: { mode?: number }): Promise<void>;
  /**
   * Writes under a temporary name created exclusively in the checked folder, then renames it into place,
   * so a reader never sees half a file and no name on the way is followed.
   */
  writeFileAtomic(
    relPath: string,
    data: Uint8Array,
    options?: { mode?: number; dirMode?: number },
  ): Promise<void>;
  /**
   * Every entry under the root, depth first; a folder swapped or removed while walked is skipped, and so
   * is what is inside a folder `descend` refuses (the folder itself is still yielded).
   */
  walk(options?: { descend?(relPath: string): boolean }): AsyncGenerator<GuardedEntry>;
  /** Removes a file, symlink or empty folder (the entry itself, never what a link points to). */
  remove(relPath: string): Promise<void>;
  /** Change notifications (inotify) for the checked folder itself, whatever its name means later. */
  watch(relPath: string, listener: (event: string, name: string | null) => void): fsSync.FSWatcher;
}

export interface GuardedRootOptions {
  /** Makes the root first (with its parents) when it is missing, with this mode. */
  create?: { mode: number };
  /**
   * What the root is called in refusals ("the group folder"), which may reach a chat, where the host's
   * own path should not; default: the root's path.
   */
  label?: string;
}

/**
 * Opens `rootPath` (which must be a real folder; the root itself is the host's, only what is inside it
 * is a container's) as the bound of every later operation.
 */
export async function openGuardedRoot(
  rootPath: string,
  options: GuardedRootOptions = {},
): Promise<GuardedRoot> {
  if (options.create) await fs.mkdir(rootPath, { recursive: true, mode: options.create.mode });
  const root = await fs.realpath(rootPath);
  if (!(await fs.lstat(root)).isDirectory()) throw new Error(`${rootPath} is not a folder`);
  return guardedRoot(root, options.label ?? root);
}

/** `openGuardedRoot` for a caller that cannot wait (a file watcher's callback). */
export function openGuardedRootSync(rootPath: string, options: GuardedRootOptions = {}): GuardedRoot {
  if (options.create) fsSync.mkdirSync(rootPath, { recursive: true, mode: options.create.mode });
  const root = fsSync.realpathSync(rootPath);
  if (!fsSync.lstatSync(root).isDirectory()) throw new Error(`${rootPath} is not a folder`);
  return guardedRoot(root, options.label ?? root);
}

function guardedRoot(root: string, label: string): GuardedRoot {
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

  function watch(relPath: string, listener: (event: string, name: string | null) => void): fsSync.FSWatcher {
    // The watch is on the folder the descriptor holds (inotify keeps the inode, not the name).
    return withDirSync(relative(relPath), (fd) =>
      fsSync.watch(viaFd(fd), { persistent: false }, (event, name) =>
        listener(event, typeof name === 'string' ? name : null),
      ),
    );
  }

  return {
    path: root,
    readFile,
    copyFileOut,
    withFileSync,
    stat,
    statSync,
    readDirSync,
    mkdirp,
    writeFileAtomic,
    walk,
    remove,
    watch,
  };
}
