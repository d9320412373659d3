import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { z } from 'zod';
import { systemClock, type Clock } from '../../time/clock.ts';

// The mount plan's walk costs one lstat per directory of every mounted tree at every run (2,600 for this
// repository), and the run waits for it: it is the check that a pre-started container's mounts are still
// what a fresh run would get. Inotify tells of every change to a watched directory instead, so a tree
// whose directories are all watched, and which nothing touched since a walk that found every directory
// unchanged, is known to be unchanged without a look at it.
//
// Two things keep this from failing open. (1) Node's fs.watch drops the kernel's queue-overflow event
// (libuv finds no watcher for it), so an overflow cannot be seen; but the kernel keeps every event queued
// before one, and the queue holds `max_queued_events` (16,384 by default) of them, so an overflow can only
// follow events the watches do deliver. Any delivered event counts against its tree: a tree is trusted only
// while its count is where it was at the verifying walk, so an overflow always shows as a change. The
// watches live in a worker thread so that its inotify queue is its own: the host's other watches (the disk
// quota's, which a container can flood) share the main thread's queue and could overflow it with events of
// theirs only. (2) A change made just before a run's check may still be in the queue, unread. `sync()`
// touches a canary file in a watched folder and answers when its event arrives: the queue is read in
// order, so every earlier change has been counted by then. No answer in time, and the tree is walked.
// What inotify does not see is not trusted either: a tree on a file system outside `LOCAL_FILE_SYSTEMS`
// (a network file system changes on other machines), and a mount made over or under the tree (checked in
// /proc/self/mountinfo at every sync; a mount sends no event).

/** What `sync()` found: each armed tree's event count, and the trees whose watches are not all in place. */
export interface WalkSync {
  events: ReadonlyMap<string, number>;
  broken: ReadonlySet<string>;
}

export interface TreeWatch {
  /**
   * Watches exactly these directories of a tree (each by the inode its walk saw; one that is another
   * inode by now fails the request). `onArmed(true)` once all are watched.
   */
  arm(root: string, dirs: readonly { path: string; ino: bigint }[], onArmed: (ok: boolean) => void): void;
  /** Resolves once every change made before the call is counted; undefined when that was not seen in time. */
  sync(): Promise<WalkSync | undefined>;
  close(): Promise<void>;
}

export interface TreeWatchDeps {
  /** A folder no container can write, for the canary file (the data dir's shadow folder). */
  canaryDir: string;
  clock?: Pick<Clock, 'setTimer'>;
  /** How long `sync()` waits for the canary before the trees are walked instead. */
  syncTimeoutMs?: number;
}

export const SYNC_TIMEOUT_MS = 500;

/** statfs magic numbers of local file systems whose changes all pass through this kernel's inotify. */
export const LOCAL_FILE_SYSTEMS = {
  ext4: 0xef53,
  xfs: 0x58465342,
  btrfs: 0x9123683e,
  tmpfs: 0x01021994,
  overlay: 0x794c7630,
} as const;

const fromWorker = z.discriminatedUnion('type', [
  z.object({ type: z.literal('armed'), id: z.number(), ok: z.boolean() }),
  z.object({
    type: z.literal('synced'),
    ids: z.array(z.number()),
    events: z.array(z.tuple([z.string(), z.number()])),
    broken: z.array(z.string()),
  }),
]);

/**
 * The worker's code, evaluated as CommonJS (as wal-checkpoints.ts does: no second bundle entry point).
 * It holds one watcher per directory, counts events per tree, and answers syncs in order.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const path = require('node:path');
const LOCAL = new Set(workerData.localFileSystems);
const watchers = new Map();
const events = new Map();
const broken = new Set();
const mounts = new Map();
const bump = (root) => events.set(root, (events.get(root) || 0) + 1);
let answering = [];
let queued = [];
const touch = () => { const t = new Date(); fs.utimesSync(workerData.canary, t, t); };
const unescape = (p) => p.replace(/\\\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
const related = (a, b) => a === b || a.startsWith(b + path.sep) || b.startsWith(a + path.sep) || b === path.sep;
function checkMounts() {
  let table;
  try { table = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\\n'); } catch { table = undefined; }
  for (const root of events.keys()) {
    const lines = table === undefined ? ['unreadable'] : table.filter((line) => {
      const point = line.split(' ')[4];
      return point !== undefined && related(root, unescape(point));
    });
    const seen = lines.join('\\n');
    if (mounts.has(root) && mounts.get(root) !== seen) { bump(root); broken.add(root); }
    mounts.set(root, seen);
  }
}
const canaryName = path.basename(workerData.canary);
fs.watch(path.dirname(workerData.canary), { persistent: false }, (_event, name) => {
  // Only the canary's own event says the queue was read up to the touch: another file's event in the
  // folder may have been queued before a change the sync must count.
  if (answering.length === 0 || name !== canaryName) return;
  checkMounts();
  parentPort.postMessage({ type: 'synced', ids: answering, events: [...events], broken: [...broken] });
  answering = queued;
  queued = [];
  if (answering.length > 0) touch();
});
function arm(msg) {
  const wanted = new Map(msg.dirs);
  // Every watch of the tree is made anew: one whose directory was removed is gone in the kernel, and a
  // directory made in its place can have the same inode number.
  for (const [key, w] of watchers) {
    if (w.root === msg.root) { w.watcher.close(); watchers.delete(key); }
  }
  bump(msg.root);
  broken.delete(msg.root);
  mounts.delete(msg.root);
  let ok;
  try { ok = LOCAL.has(fs.statfsSync(msg.root).type); } catch { ok = false; }
  for (const [dir, ino] of wanted) {
    if (!ok) break;
    try {
      if (String(fs.lstatSync(dir, { bigint: true }).ino) !== ino) { ok = false; break; }
      const watcher = fs.watch(dir, { persistent: false }, () => bump(msg.root));
      watcher.on('error', () => { bump(msg.root); broken.add(msg.root); });
      // Keyed by tree too: a directory in two trees (an extra mount inside the project) has a watch for each.
      watchers.set(msg.root + '\\0' + dir, { root: msg.root, watcher });
      // fs.watch follows a path: the inode it watches is the one seen before and after it.
      if (String(fs.lstatSync(dir, { bigint: true }).ino) !== ino) ok = false;
    } catch { ok = false; }
  }
  if (!ok) broken.add(msg.root);
  checkMounts();
  parentPort.postMessage({ type: 'armed', id: msg.id, ok });
}
parentPort.on('message', (msg) => {
  if (msg.type === 'close') { for (const w of watchers.values()) w.watcher.close(); parentPort.close(); process.exit(0); }
  if (msg.type === 'arm') return arm(msg);
  if (msg.type === 'sync') {
    if (answering.length > 0) { queued.push(msg.id); return; }
    answering = [msg.id];
    touch();
  }
});
`;

/** Starts the watching worker; the canary file is made in `canaryDir`. */
export function createTreeWatch(deps: TreeWatchDeps): TreeWatch {
  const clock = deps.clock ?? systemClock;
  const syncTimeoutMs = deps.syncTimeoutMs ?? SYNC_TIMEOUT_MS;
  fs.mkdirSync(deps.canaryDir, { recursive: true, mode: 0o755 });
  const canary = path.join(deps.canaryDir, 'canary');
  fs.writeFileSync(canary, '');
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { canary, localFileSystems: Object.values(LOCAL_FILE_SYSTEMS) },
  });
  worker.unref();
  let nextId = 0;
  let gone = false;
  const armed = new Map<number, (ok: boolean) => void>();
  const syncs = new Map<number, (synced: WalkSync | undefined) => void>();
  const failAll = () => {
    gone = true;
    for (const done of armed.values()) done(false);
    for (const done of syncs.values()) done(undefined);
    armed.clear();
    syncs.clear();
  };
  worker.on('error', failAll);
  worker.on('exit', failAll);
  worker.on('message', (raw: unknown) => {
    const msg = fromWorker.safeParse(raw);
    if (!msg.success) return;
    if (msg.data.type === 'armed') {
      armed.get(msg.data.id)?.(msg.data.ok);
      armed.delete(msg.data.id);
      return;
    }
    const synced: WalkSync = { events: new Map(msg.data.events), broken: new Set(msg.data.broken) };
    for (const id of msg.data.ids) {
      const done = syncs.get(id);
      syncs.delete(id);
      done?.(synced);
    }
  });

  return {
    arm(root, dirs, onArmed) {
      if (gone) return onArmed(false);
      const id = ++nextId;
      armed.set(id, onArmed);
      worker.postMessage({ type: 'arm', id, root, dirs: dirs.map((d) => [d.path, String(d.ino)]) });
    },
    sync() {
      if (gone) return Promise.resolve(undefined);
      const id = ++nextId;
      return new Promise((resolve) => {
        const cancel = clock.setTimer(() => {
          syncs.delete(id);
          if (syncs.size === 0) worker.unref();
          resolve(undefined);
        }, syncTimeoutMs);
        // An answer awaited holds the process like any I/O; an idle watch does not.
        worker.ref();
        syncs.set(id, (synced) => {
          cancel();
          if (syncs.size === 0) worker.unref();
          resolve(synced);
        });
        worker.postMessage({ type: 'sync', id });
      });
    },
    async close() {
      if (gone) return;
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      worker.ref();
      worker.postMessage({ type: 'close' });
      await exited;
    },
  };
}
