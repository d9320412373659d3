import type { Clock } from '../../time/clock.ts';
import type { UsageRecord } from './usage-store.ts';
import type { SqliteUsageStore, UsageRow, UsageTotals } from './usage-store-sqlite.ts';

/** How long a settlement waits in memory for the others it is written with. */
export const USAGE_FLUSH_INTERVAL_MS = 100;

export interface WriteBehindUsageDeps {
  /** Where settlements end up; `recordRows` writes all it is given in one transaction, or none. */
  durable: Pick<SqliteUsageStore, 'recordRows' | 'spentTodayMicros' | 'totalsForDay' | 'totalsForRun'>;
  clock: Clock;
  intervalMs?: number;
  /** A write that failed: its rows stay queued, still counted, and are tried again an interval later. */
  onFlushError(error: unknown, rows: number): void;
}

export interface WriteBehindUsageStore extends Omit<SqliteUsageStore, 'recordRows'> {
  /** Writes what is queued now, in one transaction. False when the write failed (the rows stay queued). */
  flush(): boolean;
  /** Settlements counted but not yet written, for tests and the bench. */
  pendingRows(): number;
  /** Writes what is queued and stops the timer; throws when the last write failed, naming what is lost. */
  close(): void;
}

/**
 * The gateway's spend settlements, written behind the requests: a settlement is queued in memory and
 * written with the others queued in the same interval in one transaction (one WAL commit for many
 * requests instead of one each), on the host's clock and at close. Queued rows are counted by every read
 * of spend from the moment they are queued (the gateway's admission, the Cop's reviews, the host's cap
 * check and notices read `spentTodayMicros` here), so no reader sees less than was spent; a write that
 * fails keeps them queued and counted, and they are retried, so a broken database holds groups at their
 * cap rather than letting them spend unrecorded. What a crash loses is what was queued: at most one
 * interval of settlements. Rows with the same run, day and model are merged before they are written, as
 * the table's upsert would merge them.
 */
export function createWriteBehindUsageStore(deps: WriteBehindUsageDeps): WriteBehindUsageStore {
  const intervalMs = deps.intervalMs ?? USAGE_FLUSH_INTERVAL_MS;
  let queued = new Map<string, UsageRow>();
  // Queued cost per group and day: what admission adds to the durable sum.
  let queuedSpend = new Map<string, number>();
  let cancelTimer: (() => void) | undefined;
  let closed = false;

  const spendKey = (groupId: string, day: string) => `${groupId}\u0000${day}`;

  const arm = () => {
    if (cancelTimer !== undefined || closed) return;
    cancelTimer = deps.clock.setTimer(() => {
      cancelTimer = undefined;
      flush();
    }, intervalMs);
  };

  const flush = (): boolean => {
    if (queued.size === 0) return true;
    const rows = [...queued.values()];
    try {
      deps.durable.recordRows(rows);
    } catch (error) {
      deps.onFlushError(error, rows.length);
      arm();
      return false;
    }
    // Written and no longer queued in one synchronous step: no read sees the cost twice or not at all.
    queued = new Map();
    queuedSpend = new Map();
    return true;
  };

  return {
    recordUsage(record: UsageRecord) {
      if (closed)
        throw new Error('the usage store is closed: a settlement came in after the database closed');
      const key = `${record.runId}\u0000${record.day}\u0000${record.model}`;
      const row = queued.get(key);
      const cost = Math.trunc(record.costMicros);
      if (row === undefined) {
        queued.set(key, {
          runId: record.runId,
          groupId: record.groupId,
          day: record.day,
          model: record.model,
          requests: 1,
          promptTokens: Math.trunc(record.promptTokens),
          completionTokens: Math.trunc(record.completionTokens),
          costMicros: cost,
        });
      } else {
        row.requests += 1;
        row.promptTokens += Math.trunc(record.promptTokens);
        row.completionTokens += Math.trunc(record.completionTokens);
        row.costMicros += cost;
      }
      const spend = spendKey(record.groupId, record.day);
      queuedSpend.set(spend, (queuedSpend.get(spend) ?? 0) + cost);
      arm();
    },
    spentTodayMicros(groupId, day) {
      return deps.durable.spentTodayMicros(groupId, day) + (queuedSpend.get(spendKey(groupId, day)) ?? 0);
    },
    // Status reads are rare: they write what is queued first and read the table (if the write fails they
    // read the table as it is; admission still counts the queued rows).
    totalsForDay(day): UsageTotals[] {
      flush();
      return deps.durable.totalsForDay(day);
    },
    totalsForRun(runId): UsageTotals[] {
      flush();
      return deps.durable.totalsForRun(runId);
    },
    flush,
    pendingRows: () => queued.size,
    close() {
      if (closed) return;
      closed = true;
      cancelTimer?.();
      cancelTimer = undefined;
      const lost = queued.size;
      if (!flush())
        throw new Error(
          `${lost} spend settlement row(s) could not be written at shutdown and are lost; the database refused the write (see the log)`,
        );
    },
  };
}
