/**
 * Disk quotas of a group's folders on the host's disk. Commands get RLIMIT_FSIZE (no single file grows
 * past the group quota, set on the container). While a run lasts, its group and session folders are
 * watched (inotify, recursively): each file a write touches is measured again at once and the folder's
 * total updated, so a run is stopped as soon as a write takes it over quota, not at the next timer; and
 * the whole folder is walked every few seconds to correct the running total (files in a folder made
 * before its watch was in place, a watch that failed). The walk counts blocks actually allocated (sparse
 * files count for what they hold) and entries too: a folder of millions of empty files is over quota
 * as well. A run over quota is killed without a grace period, since its writers would go on writing.
 */
import type { FSWatcher } from 'node:fs';
import path from 'node:path';
import { toError } from '../../errors/error-message.ts';
import { errorCode } from '../../errors/error-code.ts';
import { isGuardedPathError } from '../../safe-fs/guarded-path-error.ts';
import { openGuardedRoot, openGuardedRootSync, type GuardedRoot } from '../../safe-fs/guarded-root.ts';
import { systemClock, type Clock } from '../../time/clock.ts';

export interface QuotaFolder {
  /** "group folder", "session folder": how the group is told. */
  label: string;
  path: string;
  limitBytes: number;
  /** The setting that raises the limit, named in the notice (`[containers] group_quota_mb`). */
  setting?: string;
}

export interface FolderUsage {
  bytes: number;
  entries: number;
}

/** More entries than this in one folder is over quota whatever their size (and bounds the walk). */
export const MAX_ENTRIES = 100_000;

/** Allocated bytes and entry count under `dir` (symlinks not followed); stops counting at `maxEntries`. */
export async function folderUsage(dir: string, maxEntries = MAX_ENTRIES): Promise<FolderUsage> {
  const { bytes, entries } = await measureFolder(dir, maxEntries);
  return { bytes, entries };
}

/** What a walk found: the totals and each entry's allocated bytes, by path relative to the folder. */
interface FolderMeasure extends FolderUsage {
  sizes: Map<string, number>;
}

/**
 * The walk goes through the guarded root: a folder a run swaps for a symlink while it is walked is
 * skipped, never followed into a host folder.
 */
async function measureFolder(dir: string, maxEntries: number): Promise<FolderMeasure> {
  const usage: FolderMeasure = { bytes: 0, entries: 0, sizes: new Map() };
  const root = await openGuardedRoot(dir).catch(() => null);
  if (root === null) return usage; // not made yet, or removed
  for await (const { relPath, stats } of root.walk()) {
    if (++usage.entries > maxEntries) return usage;
    usage.bytes += stats.blocks * 512;
    usage.sizes.set(relPath, stats.blocks * 512);
  }
  return usage;
}

const MB = 1024 * 1024;

function problemOf(folder: QuotaFolder, usage: FolderUsage): string | null {
  // The notice names the folder and the setting: the owner reads it and must know where and what to change.
  const where = `the ${folder.label} ${folder.path}`;
  if (usage.entries > MAX_ENTRIES)
    return `${where} holds more than ${MAX_ENTRIES} files; delete some to make room`;
  if (usage.bytes <= folder.limitBytes) return null;
  return (
    `${where} holds ${(usage.bytes / MB).toFixed(1)} MB, over its quota of ` +
    `${(folder.limitBytes / MB).toFixed(0)} MB${folder.setting ? ` (${folder.setting})` : ''}; ` +
    `delete files there to make room${folder.setting ? ', or raise the setting' : ''}`
  );
}

/** Why `folder` is over its quota, or null. */
export async function quotaProblem(folder: QuotaFolder): Promise<string | null> {
  return problemOf(folder, await folderUsage(folder.path));
}

/**
 * Measures one path again and corrects the folder's totals. Synchronous (one lstat through its checked
 * folder), so that two measurements of one file never land out of order. A path whose folder is no longer
 * a folder inside the root counts as gone.
 */
function remeasure(root: GuardedRoot | null, usage: FolderMeasure, rel: string): void {
  let bytes: number | null;
  try {
    const stats = root?.statSync(rel) ?? null;
    bytes = stats === null ? null : stats.blocks * 512;
  } catch {
    bytes = null;
  }
  const known = usage.sizes.get(rel);
  if (bytes === null) {
    if (known === undefined) return;
    usage.sizes.delete(rel);
    usage.bytes -= known;
    usage.entries -= 1;
    return;
  }
  usage.bytes += bytes - (known ?? 0);
  if (known === undefined) usage.entries += 1;
  usage.sizes.set(rel, bytes);
}

export interface DiskQuotaWatchDeps {
  /** Recursive change notifications for a folder; default fs.watch (inotify on Linux). */
  watch?: (
    dir: string,
    onChange: (relativePath: string | null) => void,
    onError: (error: Error) => void,
  ) => { close(): void };
  /** Told when a folder cannot be watched: only the periodic walk checks it then. */
  onWatchError?: (folder: QuotaFolder, error: Error) => void;
  /** Told each time a folder's usage was brought up to date (a walk, or the writes of one turn measured). */
  onMeasured?: (folder: QuotaFolder, usage: { bytes: number; entries: number }) => void;
  /** Times the walks (default: the system clock). */
  clock?: Pick<Clock, 'setTimer'>;
}

/**
 * Change notifications for every folder under `dir`: one non-recursive fs.watch (one inotify watch) per
 * folder, added as folders appear. Node's own `recursive: true` on Linux also polls every file it finds
 * with a stat watcher, which a folder of thousands of new files turns into a stall of the host. Each
 * folder is listed, stat'ed and watched through the guarded root, so a folder a run swaps for a symlink
 * is never watched or listed where the link points.
 */
function watchRecursively(
  dir: string,
  onChange: (relativePath: string | null) => void,
  onError: (error: Error) => void,
): { close(): void } {
  const root = openGuardedRootSync(dir);
  const watchers = new Map<string, FSWatcher>();
  let closed = false;
  const list = (rel: string) => {
    try {
      return root.readDirSync(rel);
    } catch {
      return []; // removed meanwhile, or no longer a folder of the root
    }
  };
  const add = (rel: string): void => {
    if (closed || watchers.has(rel) || watchers.size >= MAX_ENTRIES) return;
    let watcher: FSWatcher;
    try {
      watcher = root.watch(rel, (_event, name) => {
        if (name === null) return onChange(null);
        const child = rel === '' ? name : path.posix.join(rel, name);
        onChange(child);
        // A new folder: watch it too, and report what was made in it before the watch was in place.
        let isDirectory = false;
        try {
          isDirectory = root.statSync(child)?.isDirectory() ?? false;
        } catch {
          isDirectory = false;
        }
        if (!isDirectory) {
          watchers.get(child)?.close();
          watchers.delete(child);
        } else if (!watchers.has(child)) {
          add(child);
          for (const entry of list(child)) {
            const grandchild = path.posix.join(child, entry.name);
            onChange(grandchild);
            if (entry.isDirectory()) add(grandchild);
          }
        }
      });
    } catch (error) {
      // Removed meanwhile, or no longer a folder of the root: nothing to watch. Anything else (inotify
      // limits) is the caller's to know.
      if (errorCode(error) !== 'ENOENT' && !isGuardedPathError(error)) onError(toError(error));
      return;
    }
    watcher.on('error', (error) => {
      watchers.delete(rel);
      if (errorCode(error) !== 'ENOENT' && !closed) onError(error);
    });
    watchers.set(rel, watcher);
  };
  const addTree = (rel: string): void => {
    add(rel);
    for (const entry of list(rel))
      if (entry.isDirectory()) addTree(rel === '' ? entry.name : path.posix.join(rel, entry.name));
  };
  addTree('');
  return {
    close() {
      closed = true;
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}

function guardedOrNull(dir: string): GuardedRoot | null {
  try {
    return openGuardedRootSync(dir);
  } catch {
    return null;
  }
}

/**
 * Watches the folders until disposed: each write is measured as it happens, and every `intervalMs` the
 * folders are walked whole. The first problem found calls `stop` (once). Returns the disposer.
 */
export function watchDiskQuota(
  folders: readonly QuotaFolder[],
  intervalMs: number,
  stop: (reason: string) => void,
  deps: DiskQuotaWatchDeps = {},
): () => void {
  const watch = deps.watch ?? watchRecursively;
  const clock = deps.clock ?? systemClock;
  let disposed = false;
  let cancelWalk: (() => void) | undefined;
  const over = (problem: string): void => {
    if (disposed) return;
    disposed = true;
    stop(`disk quota: ${problem}`);
    dispose();
  };

  const states = folders.map((folder) => {
    const state = {
      folder,
      usage: { bytes: 0, entries: 0, sizes: new Map<string, number>() } as FolderMeasure,
      /** Paths touched since the last flush; measured together on the next turn of the event loop. */
      touched: new Set<string>(),
      flushQueued: false,
      /** A walk is under way; paths measured meanwhile are measured again once it ends. */
      walking: false,
      changedDuringWalk: new Set<string>(),
      watcher: undefined as { close(): void } | undefined,
      /** Null when the folder is not there (yet): only the walk measures it then. */
      root: guardedOrNull(folder.path),
    };
    const flush = (): void => {
      state.flushQueued = false;
      if (disposed) return;
      for (const rel of state.touched) {
        remeasure(state.root, state.usage, rel);
        if (state.walking) state.changedDuringWalk.add(rel);
      }
      state.touched.clear();
      deps.onMeasured?.(folder, state.usage);
      const problem = problemOf(folder, state.usage);
      if (problem !== null) over(problem);
    };
    // Once per folder: past the inotify limit every further subfolder fails the same way.
    let told = false;
    const failed = (error: Error): void => {
      if (disposed || told) return;
      told = true;
      deps.onWatchError?.(folder, error);
    };
    try {
      state.watcher = watch(
        folder.path,
        (rel) => {
          if (disposed || rel === null) return; // a change without a name: the next walk sees it
          state.touched.add(rel);
          if (!state.flushQueued) {
            state.flushQueued = true;
            setImmediate(flush);
          }
        },
        failed,
      );
    } catch (error) {
      failed(toError(error));
    }
    return state;
  });

  const walk = async (): Promise<void> => {
    for (const state of states) state.walking = true;
    for (const state of states) {
      const measured = await measureFolder(state.folder.path, MAX_ENTRIES);
      state.walking = false;
      if (disposed) return;
      // The walk may have seen a file before a write that was measured meanwhile: measure those again.
      for (const rel of state.changedDuringWalk) remeasure(state.root, measured, rel);
      state.changedDuringWalk.clear();
      state.usage = measured;
      deps.onMeasured?.(state.folder, measured);
      const problem = problemOf(state.folder, measured);
      if (problem !== null) return over(problem);
    }
    if (!disposed) cancelWalk = clock.setTimer(() => void walk(), intervalMs);
  };

  function dispose(): void {
    disposed = true;
    cancelWalk?.();
    for (const state of states) state.watcher?.close();
  }
  void walk();
  return dispose;
}
