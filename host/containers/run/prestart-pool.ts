import type { Logger } from '../../logging/logger.ts';
import type { ContainerProcess } from './container-launch.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { systemClock, type Clock } from '../../time/clock.ts';

/**
 * A container started ahead of its run, booted until it waits for run.start. `C` is what the runner keeps of
 * it (a Docker container, or a pod with the hook its run binds): the pool's policy does not depend on which.
 */
export interface Prestarted<C extends ContainerProcess = ContainerProcess> {
  container: C;
  /** What it was made from (image, mounts, limits, network, env): a run with another one cannot use it. */
  fingerprint: string;
}

export interface PrestartBudget {
  /** At most this many pre-started containers at once; 0 turns pre-starting off. */
  count: number;
  /** Their memory in use, summed, stays under this many MiB. */
  memoryMb: number;
  /** One that no run took for this long is removed. */
  idleMs: number;
}

export interface PrestartPoolDeps<G extends { id: string }, C extends ContainerProcess = ContainerProcess> {
  budget: PrestartBudget;
  /** Creates and starts a group's next container, its timeouts deferred until a run takes it. */
  launch(group: G): Promise<Prestarted<C>>;
  /** Memory in use by a container in bytes (cgroup usage less its reclaimable page cache). */
  measure(container: C): Promise<number | undefined>;
  logger: Pick<Logger, 'debug' | 'info' | 'warn'>;
  /** Times the idle stop and the memory measure (default: the system clock). */
  clock?: Pick<Clock, 'setTimer'>;
}

export interface PrestartPool<G extends { id: string }, C extends ContainerProcess = ContainerProcess> {
  /**
   * The group's pre-started container, for one run: it leaves the pool, so it never serves two. One made
   * from another fingerprint (the image, the group's mounts or config changed) is discarded instead.
   */
  take(groupId: string, fingerprint: string): C | undefined;
  /** Pre-starts the group's next container in the background, when the budget allows and none is there. */
  warm(group: G): void;
  /** Stops the group's pre-started container, if any (the group went away or changed). */
  discard(groupId: string, reason: string): void;
  /**
   * Checks every pre-started container against its group as it is now: `staleReason` answers why one may no
   * longer serve a run (its group was removed, its spec changed), or undefined to keep it. The stale ones are
   * stopped at once instead of waiting out idle_ms; returns the groups whose container was stopped.
   */
  prune(staleReason: (groupId: string, fingerprint: string) => string | undefined): string[];
  /** What is pre-started now, with each container's measured memory. */
  snapshot(): { groupId: string; name: string; memoryBytes: number | undefined }[];
  /** Stops every pre-started container and starts no more; resolves once they are gone. */
  close(): Promise<void>;
}

/** Assumed for a container whose memory was not measured yet (a Node agent idles at a few tens of MiB). */
const UNMEASURED_BYTES = 64 * 1024 * 1024;
/** How long after start a container's memory is measured: the agent has booted and warmed up by then. */
const MEASURE_AFTER_MS = 5_000;

interface Entry<C extends ContainerProcess> {
  groupId: string;
  prestarted: Prestarted<C>;
  memoryBytes: number | undefined;
  cancelIdle: () => void;
}

/**
 * A budgeted set of pre-started containers, at most one per group. Pre-starts run one at a time (they
 * compete with live runs for CPU) and never count as runs: the queue's concurrency cap counts runs only.
 * Pre-started containers hold no gateway key (the key comes with run.start) and have seen no input, so
 * discarding one needs nothing revoked. They never outlive the host: close() stops them, and a host that
 * dies closes their stdin, on which the agent exits (an orphan sweep at the next start removes the rest).
 */
export function createPrestartPool<G extends { id: string }, C extends ContainerProcess = ContainerProcess>(
  deps: PrestartPoolDeps<G, C>,
): PrestartPool<G, C> {
  const { budget, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const entries = new Map<string, Entry<C>>();
  const pending = new Set<string>();
  let chain: Promise<void> = Promise.resolve();
  let closed = false;
  /** The last prune's check and a count of prunes, so a launch in flight during a prune is checked too. */
  let lastPrune: ((groupId: string, fingerprint: string) => string | undefined) | undefined;
  let prunes = 0;

  const memoryInUse = () =>
    [...entries.values()].reduce((sum, e) => sum + (e.memoryBytes ?? UNMEASURED_BYTES), 0) +
    pending.size * UNMEASURED_BYTES;

  const fits = () =>
    entries.size + pending.size < budget.count &&
    memoryInUse() + UNMEASURED_BYTES <= budget.memoryMb * 1024 * 1024;

  const stop = (entry: Entry<C>, reason: string) => {
    entry.cancelIdle();
    entries.delete(entry.groupId);
    logger.debug(
      { groupId: entry.groupId, container: entry.prestarted.container.name, reason },
      'pre-started container removed',
    );
    return entry.prestarted.container.stop(reason, 0).catch(() => undefined);
  };

  const admit = (groupId: string, prestarted: Prestarted<C>) => {
    const entry: Entry<C> = {
      groupId,
      prestarted,
      memoryBytes: undefined,
      cancelIdle: clock.setTimer(() => void stop(entry, 'no run took it in time'), budget.idleMs),
    };
    entries.set(groupId, entry);
    // Gone on its own (crashed, killed from outside): not to be handed to a run.
    void prestarted.container.exited.then(() => {
      if (entries.get(groupId) === entry) {
        entry.cancelIdle();
        entries.delete(groupId);
      }
    });
    clock.setTimer(() => {
      if (entries.get(groupId) !== entry) return;
      deps.measure(prestarted.container).then(
        (bytes) => {
          entry.memoryBytes = bytes;
          logger.info(
            { groupId, container: prestarted.container.name, memoryBytes: bytes },
            'pre-started container idle',
          );
        },
        () => undefined,
      );
    }, MEASURE_AFTER_MS);
  };

  const prestart = async (group: G) => {
    try {
      if (closed) return;
      const prunesBefore = prunes;
      const prestarted = await deps.launch(group);
      const stale = prunes !== prunesBefore ? lastPrune?.(group.id, prestarted.fingerprint) : undefined;
      if (closed || entries.has(group.id) || stale !== undefined) {
        await prestarted.container.stop(stale ?? 'not needed any more', 0).catch(() => undefined);
        return;
      }
      admit(group.id, prestarted);
      logger.debug({ groupId: group.id, container: prestarted.container.name }, 'container pre-started');
    } catch (err) {
      // The run will start its own container, as without pre-starting; it says what failed then.
      logger.warn({ groupId: group.id, err: errorMessage(err) }, 'could not pre-start a container');
    } finally {
      pending.delete(group.id);
    }
  };

  return {
    take(groupId, fingerprint) {
      const entry = entries.get(groupId);
      if (!entry) return undefined;
      if (entry.prestarted.fingerprint !== fingerprint) {
        void stop(entry, 'its image, mounts or settings changed');
        return undefined;
      }
      entry.cancelIdle();
      entries.delete(groupId);
      return entry.prestarted.container;
    },
    warm(group) {
      if (closed || entries.has(group.id) || pending.has(group.id) || !fits()) return;
      pending.add(group.id);
      chain = chain.then(() => prestart(group));
    },
    discard(groupId, reason) {
      const entry = entries.get(groupId);
      if (entry) void stop(entry, reason);
    },
    prune(staleReason) {
      lastPrune = staleReason;
      prunes += 1;
      const pruned: string[] = [];
      for (const entry of [...entries.values()]) {
        const reason = staleReason(entry.groupId, entry.prestarted.fingerprint);
        if (reason === undefined) continue;
        void stop(entry, reason);
        pruned.push(entry.groupId);
      }
      return pruned;
    },
    snapshot() {
      return [...entries.values()].map((e) => ({
        groupId: e.groupId,
        name: e.prestarted.container.name,
        memoryBytes: e.memoryBytes,
      }));
    },
    async close() {
      closed = true;
      await chain;
      await Promise.all([...entries.values()].map((e) => stop(e, 'the host is stopping')));
    },
  };
}

/**
 * A runner's `refresh()`: stops every pre-started container whose group was removed, cannot run now, or
 * would now get another one (`fingerprintNow` differs), and warms the changed groups anew. `changedReason`
 * names what a changed fingerprint means for this runner (mounts for containers, resources for pods).
 */
export function refreshPrestarted<G extends { id: string }>(
  pool: Pick<PrestartPool<G, ContainerProcess>, 'prune'>,
  deps: {
    groupById(groupId: string): G | undefined;
    fingerprintNow(group: G): string;
    changedReason: string;
    warm(group: G): void;
  },
): void {
  const changed: G[] = [];
  pool.prune((groupId, fingerprint) => {
    const group = deps.groupById(groupId);
    if (!group) return 'its group was removed';
    let now: string;
    try {
      now = deps.fingerprintNow(group);
    } catch (err) {
      return `its group cannot run now: ${errorMessage(err)}`;
    }
    if (now === fingerprint) return undefined;
    changed.push(group);
    return deps.changedReason;
  });
  for (const group of changed) deps.warm(group);
}
