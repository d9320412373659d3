import type { Logger } from '../logging/logger.ts';
import { createSqliteUsageStore } from '../gateway/spend/usage-store-sqlite.ts';
import {
  createWriteBehindUsageStore,
  type WriteBehindUsageStore,
} from '../gateway/spend/usage-write-behind.ts';
import { errorMessage } from '../errors/error-message.ts';
import type { Store } from '../store/store.ts';
import type { Clock } from '../time/clock.ts';

/**
 * The host's one usage store: the gateway's settlements, written behind the requests in group commits
 * (usage-write-behind.ts). One for the whole host, because every reader of spend (the gateway's admission,
 * the Cop's reviews, the run queue's cap check, the spend report) must count the same queue. It closes
 * before the database (the closer stack unwinds in reverse), writing what is still queued.
 */
export function openUsageSettlements(deps: {
  store: Store;
  clock: Clock;
  logger: Logger;
  opened(name: string, close: () => void): void;
}): WriteBehindUsageStore {
  const logger = deps.logger.child({ subsystem: 'spend' });
  const usage = createWriteBehindUsageStore({
    durable: createSqliteUsageStore(deps.store.db),
    clock: deps.clock,
    onFlushError: (error, rows) =>
      logger.error(
        { err: errorMessage(error), rows },
        'spend settlements could not be written; kept in memory, counted against the caps, retried',
      ),
  });
  deps.opened('spend settlements', () => usage.close());
  return usage;
}
