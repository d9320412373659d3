import type { Logger } from '../logging/logger.ts';
import type { Store } from '../store/store.ts';
import type { Clock } from '../time/clock.ts';
import { createScheduler, type Scheduler } from './scheduler.ts';
import { createTaskDelivery } from './task-delivery.ts';

export interface SchedulerWiringDeps {
  store: Store;
  /** Wakes the group's run queue (bound late: the scheduler exists before the queue). */
  notify(groupId: string): void;
  /** `[assistant] timezone`, read at each arming. */
  timezone(): string;
  /** `[scheduler] delivery_retry_ms`. */
  retryMs: number;
  clock: Clock;
  logger: Logger;
}

/** Scheduled tasks, delivered as messages into their group's conversation. It holds no timer until `start`. */
export function wireScheduler(deps: SchedulerWiringDeps): Scheduler {
  const { store } = deps;
  return createScheduler({
    tasks: store.tasks,
    transaction: store.transaction,
    ...createTaskDelivery({ groups: store.groups, messages: store.messages, notify: deps.notify }),
    timezone: deps.timezone,
    audit: store.audit,
    logger: deps.logger.child({ subsystem: 'scheduler' }),
    retryMs: deps.retryMs,
    clock: deps.clock,
  });
}
