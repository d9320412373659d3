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

/**
 * Prunes old history in small steps, each its own short transaction, so a host that runs it between
 * messages never holds the write lock for long. Every step walks one table forward by id (ids grow with
 * time), so its work is the batch it looks at, never the whole table; a pass ends at the first row younger
 * than the cutoff. The audit log is never pruned: it is append-only by trigger, and kept whole.
 */
export function createRetentionStore(db: Db, now: () => Date = () => new Date()) {
  const outboxBatch = db.prepare<[number, number], { id: number; status: string; created_at: string }>(
    'SELECT id, status, created_at FROM outbox WHERE id > ? ORDER BY id LIMIT ?',
  );
  const deleteOutbox = db.prepare("DELETE FROM outbox WHERE id = ? AND status != 'pending'");
  const deletePlatformIds = db.prepare('DELETE FROM outbox_platform_ids WHERE outbox_id = ?');

  const messagesBatch = db.prepare<
    [number, number],
    { id: number; received_at: string; answered: number; waiting: number }
  >(
    `SELECT m.id, m.received_at, m.id <= g.agent_cursor AS answered,
            EXISTS (SELECT 1 FROM messages t
                    WHERE t.group_id = m.group_id AND t.triggers = 1 AND t.id > g.agent_cursor) AS waiting
     FROM messages m JOIN groups g ON g.id = m.group_id WHERE m.id > ? ORDER BY m.id LIMIT ?`,
  );
  const deleteMessage = db.prepare('DELETE FROM messages WHERE id = ?');

  const runsBatch = db.prepare<
    [number, number],
    { id: number; status: string; started_at: string; ended_at: string | null; task: number }
  >(
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

  /** Walks `rows` in id order: stops at the first one not older than the cutoff, deletes the ones `keep` spares. */
  function walk<R extends { id: number }>(
    rows: R[],
    limit: number,
    young: (r: R) => boolean,
    prunable: (r: R) => boolean,
    remove: (id: number) => number,
  ): RetentionStep {
    let removed = 0;
    for (const r of rows) {
      if (young(r)) return { removed, next: undefined };
      if (prunable(r)) removed += remove(r.id);
    }
    return { removed, next: rows.length < limit ? undefined : rows[rows.length - 1]?.id };
  }

  return {
    /** One step over delivered and dead replies older than `days`, starting after id `after`. */
    pruneOutbox(days: number, after: number, limit: number): RetentionStep {
      const before = cutoff(days);
      return db.transaction(() =>
        walk(
          outboxBatch.all(after, limit),
          limit,
          (r) => r.created_at >= before,
          (r) => r.status !== 'pending',
          (id) => {
            deletePlatformIds.run(id);
            return deleteOutbox.run(id).changes;
          },
        ),
      )();
    },
    /** One step over messages older than `days` that neither a pending trigger nor its context needs. */
    pruneMessages(days: number, after: number, limit: number): RetentionStep {
      const before = cutoff(days);
      return db.transaction(() =>
        walk(
          messagesBatch.all(after, limit),
          limit,
          (r) => r.received_at >= before,
          (r) => r.answered === 1 || r.waiting === 0,
          (id) => deleteMessage.run(id).changes,
        ),
      )();
    },
    /** One step over runs that ended more than `days` ago and created no task that is still open. */
    pruneRuns(days: number, after: number, limit: number): RetentionStep {
      const before = cutoff(days);
      return db.transaction(() =>
        walk(
          runsBatch.all(after, limit),
          limit,
          (r) => r.started_at >= before,
          (r) => r.status !== 'running' && r.task === 0 && r.ended_at !== null && r.ended_at < before,
          (id) => deleteRun.run(id).changes,
        ),
      )();
    },
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
