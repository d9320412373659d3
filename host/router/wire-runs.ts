import type { Logger } from '../logging/logger.ts';
import { createCapStatus } from '../gateway/spend/cap-status.ts';
import type { CapConfig } from '../gateway/spend/spend-cap.ts';
import type { HostEvents } from '../store/host-events.ts';
import type { NewOutboxItem } from '../store/outbox-store.ts';
import type { Store } from '../store/store.ts';
import type { Clock } from '../time/clock.ts';
import type { AgentRunner } from './agent-runner.ts';
import { createGroupQueue, type GroupQueueDeps } from './group-queue.ts';
import { createRunExecutor } from './run-executor.ts';
import type { RunDraftsFactory } from './run-drafts.ts';

export interface RunsWiringDeps {
  store: Store;
  /** The gateway's own usage store: settlements it has queued but not yet written count here too. */
  usage: { spentTodayMicros(groupId: string, day: string): number };
  runner: AgentRunner;
  /** Read as each run would start: the zone running now. */
  live(): { assistant: { timezone: string } };
  /** Read as each run would start: the caps running now, the groups' accounts' caps included. */
  caps(): CapConfig;
  /** `[runs]`: how many at once, how often a run is tried, the wait between tries. */
  limits: Pick<GroupQueueDeps, 'maxConcurrent' | 'maxAttempts' | 'retryBaseMs'>;
  enqueueReply(item: NewOutboxItem): void;
  notifyOwner(key: string, text: string): void;
  events: HostEvents;
  clock: Clock;
  logger: Logger;
  /** A run's draft streams, when its answers may stream (run-drafts.ts). */
  draftsFor?: RunDraftsFactory;
}

/** The runs: one executor against the database (refusing a group at its spend cap) and the per-group queue. */
export function wireRuns(deps: RunsWiringDeps) {
  const { store, clock, usage } = deps;
  const executor = createRunExecutor({
    store,
    runner: deps.runner,
    // The gateway's records and rule, read as the run would start.
    capStatus: createCapStatus({
      config: () => deps.caps(),
      spentTodayMicros: (groupId, day) => usage.spentTodayMicros(groupId, day),
      timezone: () => deps.live().assistant.timezone,
      now: clock.now,
    }),
    enqueueReply: deps.enqueueReply,
    notifyOwner: deps.notifyOwner,
    events: deps.events,
    logger: deps.logger.child({ subsystem: 'runs' }),
    ...(deps.draftsFor ? { draftsFor: deps.draftsFor } : {}),
  });
  const queue = createGroupQueue({
    executor,
    ...deps.limits,
    clock,
    logger: deps.logger.child({ subsystem: 'queue' }),
  });
  return { executor, queue };
}
