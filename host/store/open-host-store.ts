import type { Logger } from '../logging/logger.ts';
import type { Clock } from '../time/clock.ts';
import { acquireHostLock } from './host-lock.ts';
import { openStore, type Store } from './store.ts';
import { startWalCheckpoints } from './wal-checkpoints.ts';

export interface OpenHostStoreDeps {
  dataDir: string;
  databaseFile: string;
  /** Removes held secrets from text stored in the audit log. */
  redact(s: string): string;
  clock: Clock;
  /** Each part that came up, with its closer (the host's closer stack). */
  opened(name: string, close: () => void | Promise<void>): void;
  /** Names the step a failure belongs to. */
  onStep(step: string): void;
  logger: Logger;
}

/**
 * The host's database: the data folder's lock first (one host per data folder, before anything touches
 * the database, unfinished runs or containers), then the database and its WAL checkpoints.
 */
export function openHostStore(deps: OpenHostStoreDeps): Store {
  deps.onStep("taking the data folder's lock");
  const lock = acquireHostLock(deps.dataDir);
  deps.opened('host lock', () => lock.release());
  deps.onStep('opening the database');
  const store = openStore({ file: deps.databaseFile, redact: deps.redact, scheduledCheckpoints: true });
  deps.opened('database', () => store.close());
  const checkpoints = startWalCheckpoints({
    db: store.db,
    clock: deps.clock,
    logger: deps.logger.child({ subsystem: 'store' }),
  });
  deps.opened('WAL checkpoints', () => checkpoints.stop());
  return store;
}
