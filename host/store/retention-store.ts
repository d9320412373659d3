import type { Db } from './open-database.ts';

/** Days each kind of row is kept; 0 keeps it for ever. */
export interface RetentionPolicy {
  /** Delivered and dead-lettered replies (and the platform ids of what they became). */
  outboxDays: number;
  /** Messages no pending reply needs: at or below their group's cursor, or in a group with nothing to answer. */
  messagesDays: number;
  /** Finished runs no open task was created by. */
  runsDays: number;
  /** Per-run gateway usage, rolled up into one row per group, day and model (gateway_usage_daily). */
  usageDays: number;
}

/** One step of a pass over one kind: rows removed, and where the next step starts (undefined: done). */
export interface RetentionStep {
  removed: number;
  next: number | undefined;
}

export type RetentionKind = 'outbox' | 'messages' | 'runs' | 'usage';

/** Rows per table, counted cheaply: the span of ids still stored (an upper bound once rows were pruned). */
export type TableSizes = Record<'messages' | 'runs' | 'outbox' | 'audit' | 'usage', number>;

const DAY_MS = 86_400_000;

/** How a step walks one table: its next batch by id, each row's time, which old rows go, and how. */
interface TableWalk<R extends { id: number }> {
  batch: { all(after: number, limit: number): R[] };
  /** The row's time (ISO), growing with its id. */
  at(r: R): string;
  prunable(r: R, before: string): boolean;
  remove(id: number): number;
}

interface OutboxAge {
  id: number;
  status: string;
  created_at: string;
}
interface MessageAge {
  id: number;
  received_at: string;
  answered: number;
  waiting: number;
}
interface RunAge {
  id: number;
  status: string;
  started_at: string;
  ended_at: string | null;
  task: number;
}

/**
 * Prunes old history in small steps, each its own short transaction, so a host that runs it between
 * messages never holds the write lock for long. Every step walks one table forward by id (ids grow with
 * time), so its work is the batch it looks at, never the whole table; a pass ends at the first row younger
 * than the cutoff. The audit log is never pruned: it is append-only by trigger, and kept whole.
 */
export function createRetentionStore(db: Db, now: () => Date = () => new Date()) {
  const outboxBatch = db.prepare<[number, number], OutboxAge>(
    'SELECT id, status, created_at FROM outbox WHERE id > ? ORDER BY id LIMIT ?',
  );
  const deleteOutbox = db.prepare("DELETE FROM outbox WHERE id = ? AND status != 'pending'");
  const deletePlatformIds = db.prepare('DELETE FROM outbox_platform_ids WHERE outbox_id = ?');

  const messagesBatch = db.prepare<[number, number], MessageAge>(
    `SELECT m.id, m.received_at, m.id <= g.agent_cursor AS answered,
            EXISTS (SELECT 1 FROM messages t
                    WHERE t.group_id = m.group_id AND t.triggers = 1 AND t.id > g.agent_cursor) AS waiting
     FROM messages m JOIN groups g ON g.id = m.group_id WHERE m.id > ? ORDER BY m.id LIMIT ?`,
  );
  const deleteMessage = db.prepare('DELETE FROM messages WHERE id = ?');

  const runsBatch = db.prepare<[number, number], RunAge>(
    `SELECT r.id, r.status, r.started_at, r.ended_at,
            EXISTS (SELECT 1 FROM tasks t WHERE t.created_by_run = r.id AND t.status IN ('active', 'paused')) AS task
     FROM runs r WHERE r.id > ? ORDER BY r.id LIMIT ?`,
  );
  const deleteRun = db.prepare("DELETE FROM runs WHERE id = ? AND status != 'running'");

  const oldestUsageDay = db.prepare<[], { day: string | null }>('SELECT MIN(day) AS day FROM gateway_usage');
  const usageOfDay = db.prepare<
    [string, number],
    {
      rowid: number;
      group_id: string;
      day: string;
      model: string;
      requests: number;
      prompt_tokens: number;
      completion_tokens: number;
      cost_micros: number;
    }
  >('SELECT rowid, * FROM gateway_usage WHERE day = ? LIMIT ?');
  const addDaily = db.prepare(
    `INSERT INTO gateway_usage_daily (group_id, day, model, requests, prompt_tokens, completion_tokens, cost_micros)
     VALUES (@group_id, @day, @model, @requests, @prompt_tokens, @completion_tokens, @cost_micros)
     ON CONFLICT (day, group_id, model) DO UPDATE SET
       requests = requests + excluded.requests, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
       completion_tokens = completion_tokens + excluded.completion_tokens,
       cost_micros = cost_micros + excluded.cost_micros`,
  );
  const deleteUsage = db.prepare('DELETE FROM gateway_usage WHERE rowid = ?');

  // Two subqueries: each is one seek to an end of the primary key, where MAX and MIN together would scan.
  const span = (table: string, key = 'id') =>
    db.prepare<[], { n: number | null }>(
      `SELECT (SELECT MAX(${key}) FROM ${table}) - (SELECT MIN(${key}) FROM ${table}) + 1 AS n`,
    );
  const spans = {
    messages: span('messages'),
    runs: span('runs'),
    outbox: span('outbox'),
    audit: span('audit'),
    usage: span('gateway_usage', 'rowid'),
  };

  const cutoff = (days: number) => new Date(now().getTime() - days * DAY_MS).toISOString();

  /**
   * One step of a walk over a table in id order, in one transaction: stops at the first row not older than
   * the cutoff, deletes the older ones `prunable` lets go, and says where the next step starts.
   */
  function step<R extends { id: number }>(
    walk: TableWalk<R>,
    days: number,
    after: number,
    limit: number,
  ): RetentionStep {
    const before = cutoff(days);
    return db.transaction((): RetentionStep => {
      const rows = walk.batch.all(after, limit);
      let removed = 0;
      for (const r of rows) {
        if (walk.at(r) >= before) return { removed, next: undefined };
        if (walk.prunable(r, before)) removed += walk.remove(r.id);
      }
      return { removed, next: rows.length < limit ? undefined : rows[rows.length - 1]?.id };
    })();
  }

  const outbox: TableWalk<OutboxAge> = {
    batch: outboxBatch,
    at: (r) => r.created_at,
    prunable: (r) => r.status !== 'pending',
    remove(id) {
      deletePlatformIds.run(id);
      return deleteOutbox.run(id).changes;
    },
  };
  const messages: TableWalk<MessageAge> = {
    batch: messagesBatch,
    at: (r) => r.received_at,
    prunable: (r) => r.answered === 1 || r.waiting === 0,
    remove: (id) => deleteMessage.run(id).changes,
  };
  const runs: TableWalk<RunAge> = {
    batch: runsBatch,
    at: (r) => r.started_at,
    prunable: (r, before) =>
      r.status !== 'running' && r.task === 0 && r.ended_at !== null && r.ended_at < before,
    remove: (id) => deleteRun.run(id).changes,
  };

  return {
    /** One step over delivered and dead replies older than `days`, starting after id `after`. */
    pruneOutbox: (days: number, after: number, limit: number) => step(outbox, days, after, limit),
    /** One step over messages older than `days` that neither a pending trigger nor its context needs. */
    pruneMessages: (days: number, after: number, limit: number) => step(messages, days, after, limit),
    /** One step over runs that ended more than `days` ago and created no task that is still open. */
    pruneRuns: (days: number, after: number, limit: number) => step(runs, days, after, limit),
    /**
     * Rolls up to `limit` per-run usage rows of the oldest day, if that day is more than `days` ago, into
     * the daily totals. `next` is 0 while older days remain, so the caller keeps stepping.
     */
    rollUpUsage(days: number, limit: number): RetentionStep {
      const before = cutoff(days).slice(0, 10);
      return db.transaction(() => {
        const day = oldestUsageDay.get()?.day;
        if (!day || day >= before) return { removed: 0, next: undefined };
        let removed = 0;
        for (const row of usageOfDay.all(day, limit)) {
          const { rowid, ...totals } = row;
          addDaily.run(totals);
          removed += deleteUsage.run(rowid).changes;
        }
        return { removed, next: 0 };
      })();
    },
    /** Rows per table (an id span: cheap, and exact until something was pruned from the middle). */
    sizes(): TableSizes {
      const n = (s: (typeof spans)[keyof typeof spans]) => s.get()?.n ?? 0;
      return {
        messages: n(spans.messages),
        runs: n(spans.runs),
        outbox: n(spans.outbox),
        audit: n(spans.audit),
        usage: n(spans.usage),
      };
    },
  };
}

export type RetentionStore = ReturnType<typeof createRetentionStore>;
