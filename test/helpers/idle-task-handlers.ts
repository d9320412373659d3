import pino from 'pino';
import type { RunIdentity, Verdict } from '../../host/security/decisions.ts';
import { createScheduler } from '../../host/scheduler/scheduler.ts';
import { createTaskHandlers, type TaskHandlers } from '../../host/scheduler/task-handlers.ts';
import { createTaintRegistry } from '../../host/security/taint/taint.ts';
import type { Store } from '../../host/store/store.ts';

/** The real task.* handlers over a scheduler that is never started: for IPC tests and benches. */
export function idleTaskHandlers(
  store: Store,
  identity: RunIdentity,
  reviewMutation: () => Promise<Verdict>,
): TaskHandlers {
  return createTaskHandlers({
    identity,
    tasks: store.tasks,
    groups: store.groups,
    scheduler: createScheduler({
      tasks: store.tasks,
      transaction: store.transaction,
      deliver: () => undefined,
      onDelivered: () => undefined,
      timezone: () => 'UTC',
      logger: pino({ level: 'silent' }),
    }),
    timezone: 'UTC',
    reviewMutation,
    notifyOwner: () => undefined,
    taint: createTaintRegistry({
      initial: () => ({ corruption: false, secret: false }),
      onTainted: () => undefined,
    }),
    audit: store.audit,
  });
}
