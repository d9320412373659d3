import type { Logger } from '../logging/logger.ts';
import { systemClock, type Clock } from '../time/clock.ts';
import type { AuditStore } from './audit-store.ts';
import type { RetentionKind, RetentionPolicy, RetentionStep, RetentionStore } from './retention-store.ts';

export interface RetentionRunnerDeps {
  retention: RetentionStore;
  audit: Pick<AuditStore, 'record'>;
  policy: RetentionPolicy;
  /** Rows one step looks at; each step is one short transaction. */
  batchSize: number;
  /** Time between passes. */
  intervalMs: number;
  logger: Pick<Logger, 'info' | 'error'>;
  clock?: Pick<Clock, 'setTimer'>;
}

export type RetentionReport = Record<RetentionKind, number>;

const FIRST_PASS_AFTER_MS = 5 * 60_000;

/** Lets messages, deliveries and timers that arrived during a step run before the next one. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Prunes old history on a timer, in small steps with the event loop free between them, so the host's own
 * work never waits for more than one batch. Each pass that removed something leaves one audit row saying
 * what and under which policy: the audit log itself is never pruned.
 */
export function createRetentionRunner({
  retention,
  audit,
  policy,
  batchSize,
  intervalMs,
  logger,
  clock = systemClock,
}: RetentionRunnerDeps) {
  let cancel: (() => void) | undefined;
  let pass: Promise<RetentionReport> | undefined;
  let stopped = false;

  const steps: [RetentionKind, number, (after: number) => RetentionStep][] = [
    ['outbox', policy.outboxDays, (after) => retention.pruneOutbox(policy.outboxDays, after, batchSize)],
    [
      'messages',
      policy.messagesDays,
      (after) => retention.pruneMessages(policy.messagesDays, after, batchSize),
    ],
    ['runs', policy.runsDays, (after) => retention.pruneRuns(policy.runsDays, after, batchSize)],
    ['usage', policy.usageDays, () => retention.rollUpUsage(policy.usageDays, batchSize)],
  ];

  async function runPass(): Promise<RetentionReport> {
    const removed: RetentionReport = { outbox: 0, messages: 0, runs: 0, usage: 0 };
    for (const [kind, days, step] of steps) {
      if (days === 0) continue;
      let after: number | undefined = 0;
      while (after !== undefined && !stopped) {
        const s = step(after);
        removed[kind] += s.removed;
        after = s.next;
        await nextTurn();
      }
    }
    if (Object.values(removed).some((n) => n > 0)) {
      audit.record({ operation: 'retention.prune', decision: 'pruned', details: { removed, policy } });
      logger.info({ removed }, 'old history pruned');
    }
    return removed;
  }

  // The first pass comes a few minutes after start, off the start-up path, yet soon enough that a host
  // restarted more often than every interval still prunes.
  function arm(delayMs = intervalMs): void {
    if (stopped) return;
    cancel = clock.setTimer(() => void runOnce().finally(() => arm()), delayMs);
  }

  /** One pass now (or the one already running). */
  function runOnce(): Promise<RetentionReport> {
    pass ??= runPass()
      .catch((err: unknown) => {
        logger.error({ err }, 'pruning old history failed; trying again at the next pass');
        return { outbox: 0, messages: 0, runs: 0, usage: 0 };
      })
      .finally(() => (pass = undefined));
    return pass;
  }

  return {
    start: () => arm(Math.min(intervalMs, FIRST_PASS_AFTER_MS)),
    runOnce,
    async stop(): Promise<void> {
      stopped = true;
      cancel?.();
      await pass;
    },
  };
}

export type RetentionRunner = ReturnType<typeof createRetentionRunner>;
