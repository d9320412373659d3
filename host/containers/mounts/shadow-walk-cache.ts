import fs from 'node:fs';
import type { TreeWatch, WalkSync } from './tree-watch.ts';

// Walking a mounted tree for secrets costs a readdir and a pattern match of every entry, on the critical
// path of every reply (~47 ms for a 14 500-entry project). What a directory contributes depends only on its
// own entries (names and types) and on the walk's context (patterns, hidden paths), so the
// processed outcome of each directory is kept between walks and replayed while the directory's own lstat is
// unchanged: an unchanged tree then costs one lstat per directory.
//
// The stamp is dev, ino, ctime and mtime. Creating, removing or renaming an entry changes the directory's
// mtime and ctime; dev and ino change when something else is mounted or put at that path. A process can set
// mtime (utimes, `touch -d`) but never ctime (utimes itself sets ctime to now), so a container writing into a
// read-write mount cannot make a changed directory look unchanged. Changes to the files inside are not
// stamped and need not be: only names and types are read.
//
// With a tree watch (tree-watch.ts) a walk can skip even those lstats: once every directory a walk kept is
// watched, a walk that began after a `sync()` and found every directory unchanged verifies the tree, and
// later walks given a newer sync that counted no event on it since replay it whole without a syscall. Any
// event, a watch that failed, or a miss sends the tree back to the lstat walk (and re-arms its watches).

/** One step of a directory's outcome, in the order of its entries. */
export type WalkStep =
  | { kind: 'hide'; name: string; isDir: boolean; note: string }
  | { kind: 'descend'; name: string; insideGit: boolean; insideDeps: boolean };

/** What one directory contributes to a plan, before its subdirectories are walked. */
export interface DirOutcome {
  /** Entries read, counted against the walk's limit. */
  entries: number;
  /** An entry is named as a secret file (outside dependency folders). */
  matchedSecrets: boolean;
  steps: WalkStep[];
}

/** The flags a directory was walked with: the same directory walked under other flags is another outcome. */
export interface DirFlags {
  insideGit: boolean;
  insideDeps: boolean;
}

/** One walk of one root; `commit` at its end replaces what is kept for that root. */
export interface ShadowWalk {
  /** The kept outcome when the directory is unchanged, else `read()` (kept when it is old enough). */
  outcomeOf(dir: string, flags: DirFlags, read: () => DirOutcome): DirOutcome;
  /**
   * When the walk trusts its tree: the plan the last walk made from the same directories under `key` (what
   * besides them it depended on), for the caller to use whole instead of replaying every directory.
   */
  trustedPlan(key: string): unknown;
  /**
   * Keeps exactly the directories this walk visited, so directories that are gone are forgotten, and the
   * plan made from them (opaque here: the caller's, handed back by `trustedPlan`).
   */
  commit(plan?: { key: string; value: unknown }): void;
}

export interface ShadowWalkCache {
  /**
   * `context` names everything besides the directory's entries that its outcome depends on. `synced` is a
   * `sync()` of the tree watch taken just before this walk, never an older one: it is what lets the walk
   * trust an unchanged tree without looking.
   */
  begin(root: string, context: string, synced?: WalkSync): ShadowWalk;
  /** Waits until the watch has counted every change made so far (undefined without a watch, or late). */
  sync(): Promise<WalkSync | undefined>;
  /** Whether the last walk of `root` replayed it without a look (for tests and the bench). */
  trusted(root: string): boolean;
  close(): Promise<void>;
  /** Directories kept, over all roots. */
  size(): number;
}

export interface ShadowWalkCacheDeps {
  /** Wall clock in milliseconds. */
  now?: () => number;
  /** Watches kept trees so that an unchanged one needs no lstat (see tree-watch.ts). */
  watch?: TreeWatch;
}

/**
 * A directory changed less than this long before a walk is read again at every walk, as git does with
 * "racy" index entries. File system timestamps come from the kernel's coarse clock (one tick, up to ~10 ms
 * behind the wall clock), so an entry added in the same tick as the walk's lstat, just after it, leaves the
 * directory with the very ctime that was read: kept, that outcome would miss the entry for as long as the
 * directory is left alone. Once the ctime is well in the past, any later change gets a later ctime.
 */
export const RACY_WINDOW_MS = 2_000;

interface Stamp {
  dev: bigint;
  ino: bigint;
  ctimeNs: bigint;
  mtimeNs: bigint;
}

interface Kept {
  stamp: Stamp;
  flags: DirFlags;
  outcome: DirOutcome;
}

interface RootEntry {
  context: string;
  dirs: Map<string, Kept>;
  /** Whether `dirs` are all watched, as armed: true once the worker said so. */
  armed: boolean;
  /** An arm request for these `dirs` is in flight. */
  arming: boolean;
  /** The tree's event count at the sync before the walk that found every directory unchanged. */
  verifiedAt: number | undefined;
  /** The last walk replayed the tree without a look. */
  trusted: boolean;
  /** The plan last made from `dirs`. */
  plan: { key: string; value: unknown } | undefined;
}

function sameStamp(a: Stamp, b: Stamp): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.ctimeNs === b.ctimeNs && a.mtimeNs === b.mtimeNs;
}

export function createShadowWalkCache(deps: ShadowWalkCacheDeps = {}): ShadowWalkCache {
  const now = deps.now ?? Date.now;
  const { watch } = deps;
  const roots = new Map<string, RootEntry>();

  const arm = (root: string, entry: RootEntry) => {
    if (watch === undefined || entry.arming) return;
    entry.arming = true;
    const dirs = [...entry.dirs].map(([dir, kept]) => ({ path: dir, ino: kept.stamp.ino }));
    watch.arm(root, dirs, (ok) => {
      entry.arming = false;
      // A newer walk replaced the entry meanwhile: its own request arms it.
      if (roots.get(root) === entry) entry.armed = ok;
    });
  };

  return {
    begin(root, context, synced) {
      const previous = roots.get(root);
      let kept = previous?.dirs ?? new Map<string, Kept>();
      if (previous !== undefined && previous.context !== context) {
        roots.delete(root);
        kept = new Map();
      }
      const entry = roots.get(root);
      // The watches were in place before this walk began, and none of them failed.
      const watched = synced !== undefined && entry?.armed === true && !synced.broken.has(root);
      const eventsNow = synced?.events.get(root);
      const trusted =
        watched &&
        entry.verifiedAt !== undefined &&
        eventsNow !== undefined &&
        eventsNow === entry.verifiedAt;
      if (entry !== undefined && synced?.broken.has(root) === true) entry.armed = false;
      // Taken once before any lstat, so it is no later than the lstat of any directory of this walk.
      const racyBeforeNs = (BigInt(Math.floor(now())) - BigInt(RACY_WINDOW_MS)) * 1_000_000n;
      const visited = new Map<string, Kept>();
      let allHit = true;
      return {
        trustedPlan(key) {
          if (!trusted || entry.plan?.key !== key) return undefined;
          entry.trusted = true;
          return entry.plan.value;
        },
        outcomeOf(dir, flags, read) {
          const known = kept.get(dir);
          const sameFlags =
            known !== undefined &&
            known.flags.insideGit === flags.insideGit &&
            known.flags.insideDeps === flags.insideDeps;
          if (trusted && sameFlags) {
            visited.set(dir, known);
            return known.outcome;
          }
          // The stat comes before the readdir: a change between them leaves a newer ctime than the one kept,
          // so the next walk reads the directory again.
          const st = fs.lstatSync(dir, { bigint: true });
          const stamp: Stamp = { dev: st.dev, ino: st.ino, ctimeNs: st.ctimeNs, mtimeNs: st.mtimeNs };
          if (sameFlags && sameStamp(known.stamp, stamp)) {
            visited.set(dir, known);
            return known.outcome;
          }
          allHit = false;
          const outcome = read();
          if (st.isDirectory() && stamp.ctimeNs <= racyBeforeNs) {
            visited.set(dir, { stamp, flags: { ...flags }, outcome });
          }
          return outcome;
        },
        commit(plan) {
          const current = roots.get(root);
          if (allHit && current !== undefined && current.context === context) {
            // The same directories, each unchanged: the entry (and its watches) stands.
            current.dirs = visited;
            current.trusted = trusted;
            current.plan = plan;
            if (!trusted && watched && eventsNow !== undefined) current.verifiedAt = eventsNow;
            if (!current.armed) arm(root, current);
            return;
          }
          const fresh: RootEntry = {
            context,
            dirs: visited,
            armed: false,
            arming: false,
            verifiedAt: undefined,
            trusted: false,
            plan,
          };
          roots.set(root, fresh);
          arm(root, fresh);
        },
      };
    },
    // With no tree armed there is nothing a sync could let a walk trust (a group without walked mounts).
    sync: () =>
      watch !== undefined && [...roots.values()].some((entry) => entry.armed || entry.arming)
        ? watch.sync()
        : Promise.resolve(undefined),
    trusted: (root) => roots.get(root)?.trusted ?? false,
    close: () => watch?.close() ?? Promise.resolve(),
    size() {
      let n = 0;
      for (const entry of roots.values()) n += entry.dirs.size;
      return n;
    },
  };
}
