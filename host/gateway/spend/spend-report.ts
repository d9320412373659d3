import type Database from 'better-sqlite3';
import type { GatewayConfig } from '../config.ts';
import { isPriced, isTranscriptionListed } from './price-table.ts';
import { reviewOf } from './review-run-id.ts';
import { groupCap, type CapConfig } from './spend-cap.ts';
import { transcriptionOf } from './transcription-run-id.ts';
import type { TotalsRow } from './usage-store-sqlite.ts';

/**
 * What the owner has spent, read from the gateway's own records (`gateway_usage` per run, and the daily
 * totals retention rolls older days up into, `gateway_usage_daily`), never re-priced: the figures are the
 * micro-dollars the gateway charged against the caps. `carapace usage`, the admin chat's `usage` and the web
 * console all show this one report.
 */

/** The caps and prices a report is read against: the running `[gateway]` section, or the file's. */
export type SpendConfig = Pick<GatewayConfig, 'daily_cap_usd' | 'group_caps_usd' | 'prices'> &
  Pick<CapConfig, 'accountCap'>;

export interface SpendQuery {
  /** Today in the assistant's time zone, "YYYY-MM-DD" (`createDayFormatter`): the day caps are counted on. */
  today: string;
  /** The longest period in days, today included: periods are today, 7 and 30 days, cut at this. Default 30. */
  days?: number;
  /** Only this group's spend (the totals, models and runs too). */
  groupId?: string;
  /** Registered groups: listed with their cap even before they spent anything. */
  groups?: readonly string[];
  /** How many of the most expensive runs to list. Default 5. */
  topRuns?: number;
}

/** A span of whole days, `from` to `to` inclusive (`to` is today). */
export interface SpendPeriod {
  days: number;
  from: string;
  to: string;
}

export interface SpendFigures {
  costMicros: number;
  requests: number;
  promptTokens: number;
  completionTokens: number;
}

export interface GroupPeriodSpend extends SpendFigures {
  /** The most the daily cap lets the group spend in the period (cap × days). */
  capMicros: number;
}

export interface ModelSpend {
  model: string;
  /**
   * False: the gateway charged it the ceiling (no `[gateway.prices]` entry, not in the table; a voice model
   * counts as priced when the table lists it).
   */
  priced: boolean;
  /** One per period, in the order of `SpendReport.periods`. */
  periods: SpendFigures[];
}

export interface GroupSpend {
  groupId: string;
  /** The daily cap, and the setting that sets it. */
  cap: { usd: number; micros: number; setting: string };
  /** Today's spend in whole percent of the daily cap (rounded down); null when the cap is 0. */
  todayPercent: number | null;
  /** One per period, in the order of `SpendReport.periods`. */
  periods: GroupPeriodSpend[];
  models: ModelSpend[];
  /**
   * The Cop's reviews of the group's runs, one per period: part of `periods` and of the models' figures, shown
   * on their own. Counted from the per-run records: days older than `[retention] usage_days` count their reviews
   * under the model only.
   */
  reviews: SpendFigures[];
}

export interface RunSpend {
  /**
   * `transcription`: a group's voice notes of one minute, which belong to no run (`transcription-run-id.ts`);
   * `review`: the Cop's reviews of one run (`review-run-id.ts`), the run being `reviewedRunId`.
   */
  kind: 'run' | 'transcription' | 'review';
  runId: string;
  /** The reviewed run, for `kind: 'review'`. */
  reviewedRunId?: string;
  groupId: string;
  /**
   * When the run started (the runs table's ISO time; for reviews, the reviewed run's), or a transcription's
   * minute; null once retention removed the run, and for transcriptions recorded before their minute was.
   */
  startedAt: string | null;
  /** The first and last day it spent on within the report's longest period. */
  firstDay: string;
  lastDay: string;
  models: string[];
  costMicros: number;
  requests: number;
  promptTokens: number;
  completionTokens: number;
}

export interface DailySpend extends SpendFigures {
  day: string;
  groupId: string;
}

export interface SpendReport {
  today: string;
  /** Ascending: today, then 7 days, then 30 (each cut at `SpendQuery.days`). */
  periods: SpendPeriod[];
  /** All groups together (or the one asked for), one per period. */
  totals: SpendFigures[];
  /** Groups with spend in the longest period or registered, by id. */
  groups: GroupSpend[];
  /** Each day of the longest period with spend, per group (a chart's points): by day, then group. */
  daily: DailySpend[];
  /** Models with spend in the longest period, dearest first over that period. */
  models: ModelSpend[];
  /**
   * The dearest runs of the longest period, dearest first. Only runs whose usage is still kept per run
   * (`[retention] usage_days`): older days are daily totals without run ids.
   */
  topRuns: RunSpend[];
}

export type SpendReporter = (query: SpendQuery, config: SpendConfig) => SpendReport;

const DAY = /^\d{4}-\d{2}-\d{2}$/;
export const MAX_REPORT_DAYS = 366;

/** `day` moved by `delta` calendar days ("YYYY-MM-DD" in, out; no time zone involved). */
export function addDays(day: string, delta: number): string {
  const [y, m, d] = day.split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(y, m - 1, d + delta)).toISOString().slice(0, 10);
}

/** Periods of 1, 7 and 30 days cut at `days`, plus `days` itself when it is none of those. */
export function spendPeriods(today: string, days: number): SpendPeriod[] {
  const lengths = [...new Set([1, 7, 30].filter((n) => n < days).concat(days))].sort((a, b) => a - b);
  return lengths.map((n) => ({ days: n, from: addDays(today, 1 - n), to: today }));
}

interface DayRow extends TotalsRow {
  day: string;
  /** 1: the Cop's reviews (`review:<group>:<run>`); the daily roll-ups no longer know. */
  review: number;
}

function kindAndStart(r: RunRow): Pick<RunSpend, 'kind' | 'startedAt' | 'reviewedRunId'> {
  const t = transcriptionOf(r.run_id);
  if (t) return { kind: 'transcription', startedAt: t.at };
  const review = reviewOf(r.run_id);
  if (review) return { kind: 'review', reviewedRunId: review.reviewedRunId, startedAt: r.started_at };
  return { kind: 'run', startedAt: r.started_at };
}

interface RunRow {
  run_id: string;
  group_id: string;
  started_at: string | null;
  first_day: string;
  last_day: string;
  models: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_micros: number;
}

const zero = (): SpendFigures => ({ costMicros: 0, requests: 0, promptTokens: 0, completionTokens: 0 });

function add(into: SpendFigures, row: DayRow): void {
  into.costMicros += row.cost_micros;
  into.requests += row.requests;
  into.promptTokens += row.prompt_tokens;
  into.completionTokens += row.completion_tokens;
}

/**
 * A reporter over the host's database (a read-only connection is enough). Its statements are prepared once;
 * each report reads the longest period's per-day totals (one row per day, group and model, through the day
 * indexes) and sums them into the shorter periods, so every period agrees with the others to the micro-dollar.
 */
export function createSpendReporter(
  db: Database.Database,
  /** The host's: writes the spend settlements still queued (usage-write-behind.ts), so the report has them. */
  beforeRead: () => void = () => undefined,
): SpendReporter {
  // Each usage row is in exactly one table (retention moves a row and deletes it in one transaction), so the
  // union counts each request once.
  const byDay = db.prepare<{ from: string; to: string; group: string | null }, DayRow>(`
    SELECT day, group_id, model, review, SUM(requests) AS requests, SUM(prompt_tokens) AS prompt_tokens,
           SUM(completion_tokens) AS completion_tokens, SUM(cost_micros) AS cost_micros
    FROM (
      SELECT day, group_id, model, run_id LIKE 'review:%' AS review, requests, prompt_tokens,
             completion_tokens, cost_micros
      FROM gateway_usage WHERE day >= @from AND day <= @to AND (@group IS NULL OR group_id = @group)
      UNION ALL
      SELECT day, group_id, model, 0 AS review, requests, prompt_tokens, completion_tokens, cost_micros
      FROM gateway_usage_daily WHERE day >= @from AND day <= @to AND (@group IS NULL OR group_id = @group)
    )
    GROUP BY day, group_id, model, review
  `);
  // A review row's run is the reviewed run (`review:<group>:<run>`; group ids have no colon), for its start.
  const dearestRuns = db.prepare<{ from: string; to: string; group: string | null; limit: number }, RunRow>(`
    SELECT u.run_id, u.group_id, r.started_at, MIN(u.day) AS first_day, MAX(u.day) AS last_day,
           json_group_array(DISTINCT u.model) AS models, SUM(u.requests) AS requests,
           SUM(u.prompt_tokens) AS prompt_tokens, SUM(u.completion_tokens) AS completion_tokens,
           SUM(u.cost_micros) AS cost_micros
    FROM gateway_usage u LEFT JOIN runs r ON r.id = CAST(
      CASE WHEN u.run_id LIKE 'review:%' THEN substr(u.run_id, instr(substr(u.run_id, 8), ':') + 8)
           ELSE u.run_id END AS INTEGER)
    WHERE u.day >= @from AND u.day <= @to AND (@group IS NULL OR u.group_id = @group)
    GROUP BY u.run_id
    ORDER BY cost_micros DESC, u.run_id
    LIMIT @limit
  `);

  return (query, config) => {
    beforeRead();
    const { today, days = 30, topRuns = 5 } = query;
    if (!DAY.test(today) || addDays(today, 0) !== today)
      throw new RangeError(`today must be a calendar day as YYYY-MM-DD, not "${today}"`);
    if (!Number.isInteger(days) || days < 1 || days > MAX_REPORT_DAYS)
      throw new RangeError(`days must be a whole number from 1 to ${MAX_REPORT_DAYS}, not ${days}`);
    if (!Number.isInteger(topRuns) || topRuns < 0)
      throw new RangeError(`topRuns must be a whole number of at least 0, not ${topRuns}`);

    const periods = spendPeriods(today, days);
    const longest = periods[periods.length - 1] as SpendPeriod;
    const group = query.groupId ?? null;
    const rows = byDay.all({ from: longest.from, to: today, group });

    const totals = periods.map(zero);
    const daily = new Map<string, DailySpend>();
    const groups = new Map<
      string,
      { periods: SpendFigures[]; models: Map<string, SpendFigures[]>; reviews: SpendFigures[] }
    >();
    const models = new Map<string, SpendFigures[]>();
    const groupEntry = (id: string) => {
      let entry = groups.get(id);
      if (!entry)
        groups.set(
          id,
          (entry = { periods: periods.map(zero), models: new Map(), reviews: periods.map(zero) }),
        );
      return entry;
    };
    const modelEntry = (map: Map<string, SpendFigures[]>, model: string) => {
      let entry = map.get(model);
      if (!entry) map.set(model, (entry = periods.map(zero)));
      return entry;
    };
    for (const id of query.groups ?? []) if (group === null || id === group) groupEntry(id);

    for (const row of rows) {
      const key = `${row.day}\u0000${row.group_id}`;
      let day = daily.get(key);
      if (!day) daily.set(key, (day = { day: row.day, groupId: row.group_id, ...zero() }));
      add(day, row);
      const g = groupEntry(row.group_id);
      const gm = modelEntry(g.models, row.model);
      const m = modelEntry(models, row.model);
      periods.forEach((p, i) => {
        if (row.day < p.from) return;
        for (const figures of [totals[i], g.periods[i], gm[i], m[i]]) add(figures as SpendFigures, row);
        if (row.review) add(g.reviews[i] as SpendFigures, row);
      });
    }

    const last = periods.length - 1;
    const dearestFirst = (a: [string, SpendFigures[]], b: [string, SpendFigures[]]) =>
      (b[1][last] as SpendFigures).costMicros - (a[1][last] as SpendFigures).costMicros ||
      a[0].localeCompare(b[0]);
    const modelList = (map: Map<string, SpendFigures[]>): ModelSpend[] =>
      [...map.entries()].sort(dearestFirst).map(([model, figures]) => ({
        model,
        priced: isPriced(model, config.prices) || isTranscriptionListed(model),
        periods: figures,
      }));

    return {
      today,
      periods,
      totals,
      groups: [...groups.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([groupId, g]) => {
          const cap = groupCap(config, groupId);
          const spentToday = (g.periods[0] as SpendFigures).costMicros;
          return {
            groupId,
            cap,
            todayPercent: cap.micros === 0 ? null : Math.floor((spentToday * 100) / cap.micros),
            periods: g.periods.map((figures, i) => ({
              ...figures,
              capMicros: cap.micros * (periods[i] as SpendPeriod).days,
            })),
            models: modelList(g.models),
            reviews: g.reviews,
          };
        }),
      daily: [...daily.values()].sort(
        (a, b) => a.day.localeCompare(b.day) || a.groupId.localeCompare(b.groupId),
      ),
      models: modelList(models),
      topRuns:
        topRuns === 0
          ? []
          : dearestRuns.all({ from: longest.from, to: today, group, limit: topRuns }).map((r) => ({
              ...kindAndStart(r),
              runId: r.run_id,
              groupId: r.group_id,
              firstDay: r.first_day,
              lastDay: r.last_day,
              models: (JSON.parse(r.models) as string[]).sort(),
              costMicros: r.cost_micros,
              requests: r.requests,
              promptTokens: r.prompt_tokens,
              completionTokens: r.completion_tokens,
            })),
    };
  };
}
