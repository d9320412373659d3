import type { Logger } from '../logging/logger.ts';
import type { ActiveRun, RunEnd, RunExecutor } from './run-executor.ts';
import { backoffMs } from '../time/backoff.ts';
import { systemClock, type Clock } from '../time/clock.ts';

export interface GroupQueueDeps {
  executor: Pick<RunExecutor, 'start' | 'hasPending' | 'giveUp'>;
  maxConcurrent: number;
  maxAttempts: number;
  retryBaseMs: number;
  logger: Logger;
  /** The retry timers (default: the system clock). */
  clock?: Pick<Clock, 'setTimer'>;
}

export interface QueueSnapshot {
  active: { groupId: string; runId: number }[];
  waiting: string[];
  retrying: { groupId: string; attempt: number }[];
}

/**
 * Decides when runs start: at most one per group, at most `maxConcurrent` overall, waiting groups served
 * in arrival order. It is driven by events (notify, a run ending, a retry timer); nothing polls.
 */
export function createGroupQueue({
  executor,
  maxConcurrent,
  maxAttempts,
  retryBaseMs,
  logger,
  clock = systemClock,
}: GroupQueueDeps) {
  const active = new Map<string, ActiveRun>();
  const waiting: string[] = [];
  const attempts = new Map<string, number>();
  /** Each retry's cancel function. */
  const retryTimers = new Map<string, () => void>();
  const idleWaiters: (() => void)[] = [];
  let closed = false;

  const isIdle = () => active.size === 0 && waiting.length === 0 && retryTimers.size === 0;
  const settleIdle = () => {
    if (!isIdle()) return;
    for (const resolve of idleWaiters.splice(0)) resolve();
  };

  function enqueue(groupId: string): void {
    if (closed || active.has(groupId) || retryTimers.has(groupId) || waiting.includes(groupId)) return;
    waiting.push(groupId);
    pump();
  }

  function pump(): void {
    while (!closed && active.size < maxConcurrent && waiting.length > 0) {
      const groupId = waiting.shift() as string;
      const attempt = attempts.get(groupId) ?? 1;
      let run: ActiveRun | undefined;
      try {
        run = executor.start(groupId, attempt);
      } catch (err) {
        logger.error({ err, groupId }, 'could not start a run');
      }
      if (!run) {
        // Nothing to run (or it could not start): a later trigger starts over at the first attempt.
        attempts.delete(groupId);
        continue;
      }
      active.set(groupId, run);
      run.finished.then(
        (end) => onFinished(groupId, attempt, end),
        (err: unknown) => {
          logger.error({ err, groupId }, 'run bookkeeping failed');
          active.delete(groupId);
          pump();
          settleIdle();
        },
      );
    }
    settleIdle();
  }

  function onFinished(groupId: string, attempt: number, end: RunEnd): void {
    active.delete(groupId);
    if (end.kind === 'failed' && !end.replied && !closed) {
      if (attempt < maxAttempts && end.retryable) {
        attempts.set(groupId, attempt + 1);
        const delay = backoffMs(attempt - 1, { baseMs: retryBaseMs });
        logger.warn({ groupId, attempt, delay, reason: end.reason }, 'run failed before replying; retrying');
        retryTimers.set(
          groupId,
          clock.setTimer(() => {
            retryTimers.delete(groupId);
            enqueue(groupId);
          }, delay),
        );
        pump();
        return;
      }
      logger.error({ groupId, attempt, reason: end.reason }, 'run failed on its last attempt; giving up');
      executor.giveUp(groupId, end);
    }
    attempts.delete(groupId);
    if (!closed && executor.hasPending(groupId)) waiting.push(groupId);
    pump();
  }

  return {
    /** A triggering message was stored for this group. */
    notify(groupId: string): void {
      const run = active.get(groupId);
      if (run) run.offerNewMessages();
      else enqueue(groupId);
    },
    snapshot(): QueueSnapshot {
      return {
        active: [...active.values()].map((r) => ({ groupId: r.groupId, runId: r.runId })),
        waiting: [...waiting],
        retrying: [...retryTimers.keys()].map((groupId) => ({
          groupId,
          attempt: attempts.get(groupId) ?? 1,
        })),
      };
    },
    isBusy(groupId: string): boolean {
      return active.has(groupId) || waiting.includes(groupId) || retryTimers.has(groupId);
    },
    /** Resolves when no run is active, waiting or scheduled for retry. */
    whenIdle(): Promise<void> {
      return isIdle() ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve));
    },
    async close(reason: string): Promise<void> {
      closed = true;
      for (const cancel of retryTimers.values()) cancel();
      retryTimers.clear();
      waiting.length = 0;
      const runs = [...active.values()];
      for (const r of runs) r.stop(reason);
      await Promise.allSettled(runs.map((r) => r.finished));
    },
  };
}

export type GroupQueue = ReturnType<typeof createGroupQueue>;
