import type { Logger } from '../logging/logger.ts';
import type { Clock } from '../time/clock.ts';
import { createRetentionRunner, type RetentionRunner } from './retention-runner.ts';
import type { Store } from './store.ts';

/** `[retention]` as config.toml spells it (the store knows no config file: it is given the section). */
export interface RetentionSettings {
  outbox_days: number;
  messages_days: number;
  runs_days: number;
  usage_days: number;
  batch_size: number;
  interval_ms: number;
}

/** Old rows pruned in short batches, a pass now and then every `interval_ms`; `stop()` ends it. */
export function startRetention(
  store: Pick<Store, 'retention' | 'audit'>,
  settings: RetentionSettings,
  clock: Clock,
  logger: Logger,
): RetentionRunner {
  const retention = createRetentionRunner({
    retention: store.retention,
    audit: store.audit,
    policy: {
      outboxDays: settings.outbox_days,
      messagesDays: settings.messages_days,
      runsDays: settings.runs_days,
      usageDays: settings.usage_days,
    },
    batchSize: settings.batch_size,
    intervalMs: settings.interval_ms,
    clock,
    logger: logger.child({ subsystem: 'retention' }),
  });
  retention.start();
  return retention;
}
