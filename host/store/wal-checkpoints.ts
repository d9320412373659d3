import fs from 'node:fs';
import type { Logger } from '../logging/logger.ts';
import type { Clock } from '../time/clock.ts';
import type { Db } from './open-database.ts';

/**
 * When the host's WAL is copied back into the database. SQLite's automatic checkpoint runs inside the
 * commit that crosses `wal_autocheckpoint` pages: on the message path, where it was most of the delivered
 * p99 with a month of history (20–22 ms a message against 1–2 ms without it). The host turns it off
 * (`openStore({ scheduledCheckpoints: true })`) and checkpoints here instead: once the WAL has stopped
 * changing for a tick (the host is idle), or at once when it passes `maxWalBytes` (the bound on its size
 * while the host never rests). PASSIVE checkpoints never wait for a reader or a writer; a WAL that a
 * checkpoint fully copied is rewritten from its start by the next commit and cut to `journal_size_limit`.
 */
export interface WalCheckpointsOptions {
  db: Pick<Db, 'pragma' | 'name'>;
  clock: Clock;
  logger: Pick<Logger, 'warn' | 'debug'>;
  /** How often the WAL is looked at (its size and time of change: one stat). */
  intervalMs?: number;
  /** Past this size the WAL is checkpointed whether the host is busy or not. */
  maxWalBytes?: number;
}

export const WAL_CHECK_INTERVAL_MS = 1_000;
export const MAX_WAL_BYTES = 64 * 1024 * 1024;

export interface WalCheckpoints {
  /** Checkpoints what is left (at stop) and disarms the timer. */
  stop(): void;
  /** For tests and the bench: how many checkpoints ran, and why. */
  readonly counts: { idle: number; bound: number };
  /** The last checkpoint's frames: in the WAL, and copied back into the database. */
  readonly last: () => { log: number; checkpointed: number } | undefined;
}

export function startWalCheckpoints(options: WalCheckpointsOptions): WalCheckpoints {
  const { db, clock, logger } = options;
  const intervalMs = options.intervalMs ?? WAL_CHECK_INTERVAL_MS;
  const maxWalBytes = options.maxWalBytes ?? MAX_WAL_BYTES;
  const walFile = `${db.name}-wal`;
  const counts = { idle: 0, bound: 0 };
  let previous = walState(walFile);
  // Whether the WAL changed since the last checkpoint: an unchanged one is left alone.
  let dirty = previous.size > 0;
  let cancel: (() => void) | undefined;
  let last: { log: number; checkpointed: number } | undefined;

  const checkpoint = (why: 'idle' | 'bound' | 'stop') => {
    try {
      const [result] = db.pragma('wal_checkpoint(PASSIVE)') as {
        busy: number;
        log: number;
        checkpointed: number;
      }[];
      if (why !== 'stop') counts[why]++;
      if (result) last = { log: result.log, checkpointed: result.checkpointed };
      // Frames a reader still needs stay in the WAL; the next checkpoint takes them.
      dirty = result !== undefined && result.checkpointed < result.log;
      logger.debug({ why, ...result }, 'WAL checkpoint');
    } catch (err) {
      logger.warn({ err, why }, 'WAL checkpoint failed; the next one will try again');
    }
    previous = walState(walFile);
  };

  const tick = () => {
    const now = walState(walFile);
    const changed = now.size !== previous.size || now.mtimeMs !== previous.mtimeMs;
    previous = now;
    if (changed) dirty = true;
    if (dirty && now.size >= maxWalBytes) checkpoint('bound');
    else if (dirty && !changed) checkpoint('idle');
    cancel = clock.setTimer(tick, intervalMs);
  };
  cancel = clock.setTimer(tick, intervalMs);

  return {
    stop() {
      cancel?.();
      cancel = undefined;
      if (dirty) checkpoint('stop');
    },
    counts,
    last: () => last,
  };
}

function walState(file: string): { size: number; mtimeMs: number } {
  try {
    const stat = fs.statSync(file);
    return { size: stat.size, mtimeMs: stat.mtimeMs };
  } catch {
    return { size: 0, mtimeMs: 0 };
  }
}
