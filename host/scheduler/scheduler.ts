import type { AuditStore } from '../store/audit-store.ts';
import type { TaskAdvance, TaskRecord, TasksStore } from '../store/tasks-store.ts';
import { systemClock, type Clock } from '../time/clock.ts';
import type { Logger } from '../logging/logger.ts';
import { nextRunAfter } from './next-run.ts';

/** Node's timers overflow above 2^31-1 ms (about 24.8 days) and then fire at once; longer waits re-arm. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** One firing of a task, as `deliver` and `onDelivered` see it. */
export interface TaskFiring {
  /** The task as it was when it came due. */
  task: TaskRecord;
  /** The instant it was due (epoch ms): with the task id, it names this firing uniquely. */
  dueAt: number;
  firedAt: number;
  /** What the task became: due again at `nextRunAt`, or completed (or paused, when no next run could be computed). */
  after: TaskAdvance;
}

export interface SchedulerDeps {
  tasks: Pick<TasksStore, 'due' | 'earliestAfter' | 'advance'>;
  /** One SQLite transaction (`store.transaction`): the firing is recorded and delivered together or not at all. */
  transaction<T>(fn: () => T): T;
  /**
   * Puts the task's message into its group. Must write synchronously (it runs inside the transaction that
   * advances the task), so a crash leaves either both or neither: a task never fires twice nor is lost.
   */
  deliver(firing: TaskFiring): void;
  /** After the commit: wake whatever starts runs (the group queue). */
  onDelivered(firing: TaskFiring): void;
  /** IANA zone cron expressions are evaluated in (`[assistant].timezone`); read at each firing. */
  timezone: () => string;
  audit?: Pick<AuditStore, 'record'>;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  clock?: Clock;
  /** How long a task whose delivery failed waits before the next attempt. */
  retryMs?: number;
}

export interface Scheduler {
  /** Fires what came due while the host was down (once per task), then arms the timer. */
  start(): void;
  /** Re-arms the timer for the earliest due task; call after every change to the tasks table. */
  reschedule(): void;
  /** Disarms the timer; nothing fires afterwards. */
  stop(): void;
  /** When the armed timer will wake the scheduler (epoch ms), or undefined when none is armed. */
  nextWakeAt(): number | undefined;
}

export const DEFAULT_DELIVERY_RETRY_MS = 60_000;

/**
 * Fires scheduled tasks from one timer, armed for the earliest `next_run_at` and re-armed after every
 * firing and every change: nothing polls. A firing is recorded before (and in the same transaction as) its
 * delivery, so a crash cannot fire a task twice, and missed periods collapse into one firing.
 */
export function createScheduler(deps: SchedulerDeps): Scheduler {
  const { tasks, timezone, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const retryMs = deps.retryMs ?? DEFAULT_DELIVERY_RETRY_MS;
  /** Tasks whose delivery failed, and when to try them again: without this a failing task would spin. */
  const retryAt = new Map<string, number>();
  let cancelTimer: (() => void) | undefined;
  let wakeAt: number | undefined;
  let running = false;

  const audit = (task: TaskRecord, decision: string, reason: string, details: object) => {
    try {
      deps.audit?.record({ groupId: task.groupId, operation: 'task.fire', decision, reason, details });
    } catch (err) {
      logger.error({ err, taskId: task.id }, 'could not audit a task firing');
    }
  };

  function disarm(): void {
    cancelTimer?.();
    cancelTimer = undefined;
    wakeAt = undefined;
  }

  /** The earliest instant something needs doing: a due task not waiting for a retry, a retry, a future task. */
  function nextWake(now: number): number | undefined {
    let wake = tasks.earliestAfter(now);
    const dueIds = new Set<string>();
    for (const task of tasks.due(now)) {
      dueIds.add(task.id);
      const at = Math.max(now, retryAt.get(task.id) ?? now);
      wake = wake === undefined ? at : Math.min(wake, at);
    }
    // A task paused, cancelled or rescheduled while waiting for its retry starts afresh.
    for (const id of retryAt.keys()) if (!dueIds.has(id)) retryAt.delete(id);
    return wake;
  }

  function arm(): void {
    disarm();
    if (!running) return;
    const now = clock.now();
    const target = nextWake(now);
    if (target === undefined) return;
    const delay = Math.min(Math.max(0, target - now), MAX_TIMER_MS);
    wakeAt = now + delay;
    cancelTimer = clock.setTimer(onTimer, delay);
  }

  function onTimer(): void {
    cancelTimer = undefined;
    wakeAt = undefined;
    if (!running) return;
    try {
      fireDue();
    } catch (err) {
      logger.error({ err }, 'firing scheduled tasks failed');
    }
    arm();
  }

  function fireDue(): void {
    const now = clock.now();
    for (const task of tasks.due(now)) {
      const retry = retryAt.get(task.id);
      if (retry !== undefined && retry > now) continue;
      fire(task, now);
    }
  }

  function fire(task: TaskRecord, now: number): void {
    const dueAt = task.nextRunAt as number;
    let after: TaskAdvance;
    try {
      const next = nextRunAfter(task.schedule, dueAt, now, timezone());
      after = { status: next === null ? 'completed' : 'active', nextRunAt: next, lastRunAt: now };
    } catch (err) {
      // Fire this once more (it was due), but stop it: a schedule that cannot compute a next run would loop.
      logger.error(
        { err, taskId: task.id },
        'no next run could be computed for a task; it is paused after this run',
      );
      after = { status: 'paused', nextRunAt: null, lastRunAt: now };
    }
    const firing: TaskFiring = { task, dueAt, firedAt: now, after };
    let fired: boolean;
    try {
      fired = deps.transaction(() => {
        if (!tasks.advance(task.id, dueAt, after)) return false;
        deps.deliver(firing);
        return true;
      });
    } catch (err) {
      retryAt.set(task.id, now + retryMs);
      logger.error(
        { err, taskId: task.id, retryInMs: retryMs },
        'a scheduled task could not be delivered; retrying',
      );
      audit(task, 'failed', 'delivery failed; it will be retried', {
        taskId: task.id,
        dueAt,
        retryInMs: retryMs,
      });
      return;
    }
    retryAt.delete(task.id);
    if (!fired) return;
    logger.info(
      { taskId: task.id, groupId: task.groupId, dueAt, nextRunAt: after.nextRunAt, status: after.status },
      'scheduled task fired',
    );
    audit(task, 'fired', `scheduled task due at ${new Date(dueAt).toISOString()}`, {
      taskId: task.id,
      dueAt,
      nextRunAt: after.nextRunAt,
      status: after.status,
    });
    try {
      deps.onDelivered(firing);
    } catch (err) {
      // The message is stored; the next start's recovery of pending triggers picks it up.
      logger.error({ err, taskId: task.id }, 'could not notify the queue of a scheduled task');
    }
  }

  return {
    start() {
      if (running) return;
      running = true;
      try {
        fireDue();
      } catch (err) {
        logger.error({ err }, 'firing tasks missed while the host was down failed');
      }
      arm();
    },
    reschedule() {
      arm();
    },
    stop() {
      running = false;
      disarm();
    },
    nextWakeAt() {
      return wakeAt;
    },
  };
}
