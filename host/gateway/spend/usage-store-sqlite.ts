import type Database from 'better-sqlite3';
import type { UsageRecord, UsageStore } from './usage-store.ts';

/**
 * Schema for the gateway's usage table, to be applied once as a numbered migration by the store
 * subsystem. One row per (run, day, model): requests add to it, so the table grows with runs, not tokens.
 */

export interface UsageTotals {
  groupId: string;
  model: string;
  requests: number;
  promptTokens: number;
  completionTokens: number;
  costMicros: number;
}

/** One row's worth of settlements: `requests` of them, summed. */
export interface UsageRow extends UsageRecord {
  requests: number;
}

export interface SqliteUsageStore extends UsageStore {
  recordUsage(record: UsageRecord): void;
  /** Adds every row to the table in one transaction (one WAL commit), or none of them. */
  recordRows(rows: readonly UsageRow[]): void;
  spentTodayMicros(groupId: string, day: string): number;
  /** Per group and model totals for one day, for status output. */
  totalsForDay(day: string): UsageTotals[];
  /** Totals of one run per model. */
  totalsForRun(runId: string): UsageTotals[];
}

/** A totals row as SQLite returns it (snake case). */
export interface TotalsRow {
  group_id: string;
  model: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_micros: number;
}

function toTotals(row: TotalsRow): UsageTotals {
  return {
    groupId: row.group_id,
    model: row.model,
    requests: row.requests,
    promptTokens: row.prompt_tokens,
    completionTokens: row.completion_tokens,
    costMicros: row.cost_micros,
  };
}

/** Usage store on the host's database. Its table comes from migration 002-gateway-usage; this creates nothing. */
export function createSqliteUsageStore(db: Database.Database): SqliteUsageStore {
  const insert = db.prepare(`
    INSERT INTO gateway_usage (run_id, group_id, day, model, requests, prompt_tokens, completion_tokens, cost_micros)
    VALUES (@runId, @groupId, @day, @model, @requests, @promptTokens, @completionTokens, @costMicros)
    ON CONFLICT (run_id, day, model) DO UPDATE SET
      requests          = requests + excluded.requests,
      prompt_tokens     = prompt_tokens + excluded.prompt_tokens,
      completion_tokens = completion_tokens + excluded.completion_tokens,
      cost_micros       = cost_micros + excluded.cost_micros
  `);
  const spent = db.prepare<[string, string], { total: number }>(
    'SELECT COALESCE(SUM(cost_micros), 0) AS total FROM gateway_usage WHERE group_id = ? AND day = ?',
  );
  const byDay = db.prepare<[string], TotalsRow>(`
    SELECT group_id, model, SUM(requests) AS requests, SUM(prompt_tokens) AS prompt_tokens,
           SUM(completion_tokens) AS completion_tokens, SUM(cost_micros) AS cost_micros
    FROM gateway_usage WHERE day = ? GROUP BY group_id, model ORDER BY group_id, model
  `);
  const byRun = db.prepare<[string], TotalsRow>(`
    SELECT group_id, model, SUM(requests) AS requests, SUM(prompt_tokens) AS prompt_tokens,
           SUM(completion_tokens) AS completion_tokens, SUM(cost_micros) AS cost_micros
    FROM gateway_usage WHERE run_id = ? GROUP BY group_id, model ORDER BY model
  `);

  const write = (row: UsageRow) =>
    insert.run({
      runId: row.runId,
      groupId: row.groupId,
      day: row.day,
      model: row.model,
      requests: row.requests,
      promptTokens: Math.trunc(row.promptTokens),
      completionTokens: Math.trunc(row.completionTokens),
      costMicros: Math.trunc(row.costMicros),
    });
  const writeAll = db.transaction((rows: readonly UsageRow[]) => {
    for (const row of rows) write(row);
  });

  return {
    recordUsage(record) {
      write({ ...record, requests: 1 });
    },
    recordRows(rows) {
      writeAll(rows);
    },
    spentTodayMicros(groupId, day) {
      return spent.get(groupId, day)?.total ?? 0;
    },
    totalsForDay(day) {
      return byDay.all(day).map(toTotals);
    },
    totalsForRun(runId) {
      return byRun.all(runId).map(toTotals);
    },
  };
}
