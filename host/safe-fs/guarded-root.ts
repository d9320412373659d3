/**
 * The one way the host touches a folder a container can write (a group, session or media folder): open
 * once, check the descriptor, use only the descriptor. A name checked and then used again can be a
 * different file by the time it is used (a running container swaps it for a symlink in between), so every
 * operation of a guarded root opens without following the last component (`O_NOFOLLOW`), asks the kernel what it really
 * opened (`/proc/self/fd/<fd>`, which names the file the descriptor holds, wherever the path's folders
 * pointed) and refuses anything outside the root, then reads, stats or lists through that descriptor.
 *
 * Node has no `openat`, but a path through `/proc/self/fd/<dirfd>/<name>` resolves `<name>` inside the
 * folder the descriptor holds, not inside whatever the folder's name means now: creating, renaming and
 * removing go through an opened, checked folder that way, and folders are made one component at a time,
 * each opened with `O_DIRECTORY | O_NOFOLLOW` before the next.
 *
 * The parts, each its own file: the checks of a path and a descriptor (guarded-checks.ts), the openers
 * built on them (guarded-open.ts), and what is read (guarded-reads.ts) and written (guarded-writes.ts).
 *
 * Linux only (as the host is: Docker, systemd); without /proc every operation fails, closed.
 */
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import { createRootChecks } from './guarded-checks.ts';
import { createRootOpeners } from './guarded-open.ts';
import { createGuardedReads, type GuardedEntry, type GuardedFile } from './guarded-reads.ts';
import { createGuardedWrites } from './guarded-writes.ts';

export type { GuardedEntry, GuardedFile };

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

/** The root's checks, then its openers on them, then the operations on those: nothing else touches a name. */
function guardedRoot(root: string, label: string): GuardedRoot {
  const checks = createRootChecks(root, label);
  const openers = createRootOpeners(checks);
  return {
    path: root,
    withFileSync: openers.withFileSync,
    ...createGuardedReads(checks, openers),
    ...createGuardedWrites(checks, openers),
  };
}
