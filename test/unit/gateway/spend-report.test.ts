import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createSpendReporter,
  spendPeriods,
  addDays,
  type SpendConfig,
} from '../../../host/gateway/spend/spend-report.ts';
import { formatUsd } from '../../../host/gateway/spend/pricing.ts';
import { formatSpendReport } from '../../../host/gateway/spend/spend-report-text.ts';
import type { SqliteUsageStore } from '../../../host/gateway/spend/usage-store-sqlite.ts';
import type { Store } from '../../../host/store/store.ts';
import { openSpendDb, type SpendDb } from '../../helpers/spend-db.ts';

const TODAY = '2026-03-31';
const CONFIG: SpendConfig = {
  daily_cap_usd: 5,
  group_caps_usd: { family: 2 },
  prices: { 'local-free': { input_per_mtok_usd: 0, output_per_mtok_usd: 0 } },
};

let db: SpendDb;
let store: Store;
let usage: SqliteUsageStore;

beforeEach(() => {
  db = openSpendDb(['main', 'family', 'quiet']);
  ({ store, usage } = db);
});
afterEach(() => db.close());

function spend(runId: string, groupId: string, day: string, model: string, costMicros: number, tokens = 10) {
  usage.recordUsage({
    runId,
    groupId,
    day,
    model,
    promptTokens: tokens,
    completionTokens: tokens,
    costMicros,
  });
}

describe('spend report', () => {
  it('sums today, 7 and 30 days per group and model from the per-run records and the daily roll-ups', () => {
    spend('1', 'family', TODAY, 'gpt-4.1-mini', 1_200_000);
    spend('1', 'family', TODAY, 'gpt-4.1-mini', 300_001); // a second request of the same run
    spend('2', 'family', addDays(TODAY, -3), 'gpt-4.1-mini', 50);
    spend('3', 'main', addDays(TODAY, -6), 'claude-sonnet-4-5', 7);
    spend('4', 'main', addDays(TODAY, -7), 'claude-sonnet-4-5', 1_000); // outside 7 days, inside 30
    spend('5', 'main', addDays(TODAY, -30), 'claude-sonnet-4-5', 99_999); // outside 30 days
    // A day retention already rolled up: daily totals without run ids.
    store.db
      .prepare(
        `INSERT INTO gateway_usage_daily (group_id, day, model, requests, prompt_tokens, completion_tokens, cost_micros)
         VALUES ('family', ?, 'gpt-4.1-mini', 4, 400, 40, 20000)`,
      )
      .run(addDays(TODAY, -20));

    const report = createSpendReporter(store.db)(
      { today: TODAY, groups: store.groups.list().map((g) => g.id) },
      CONFIG,
    );

    expect(report.periods).toEqual([
      { days: 1, from: TODAY, to: TODAY },
      { days: 7, from: '2026-03-25', to: TODAY },
      { days: 30, from: '2026-03-02', to: TODAY },
    ]);
    expect(report.totals.map((t) => t.costMicros)).toEqual([1_500_001, 1_500_058, 1_521_058]);
    const family = report.groups.find((g) => g.groupId === 'family');
    expect(family?.periods.map((p) => p.costMicros)).toEqual([1_500_001, 1_500_051, 1_520_051]);
    expect(family?.periods[0]).toMatchObject({ requests: 2, promptTokens: 20, completionTokens: 20 });
    expect(family?.periods.map((p) => p.capMicros)).toEqual([2_000_000, 14_000_000, 60_000_000]);
    expect(family?.cap).toEqual({ usd: 2, micros: 2_000_000, setting: '[gateway].group_caps_usd."family"' });
    expect(family?.todayPercent).toBe(75);
    const main = report.groups.find((g) => g.groupId === 'main');
    expect(main?.periods.map((p) => p.costMicros)).toEqual([0, 7, 1_007]);
    expect(main?.cap).toEqual({ usd: 5, micros: 5_000_000, setting: '[gateway].daily_cap_usd' });
    // Registered without spend: listed with its cap all the same.
    expect(report.groups.map((g) => g.groupId)).toEqual(['family', 'main', 'quiet']);
    expect(report.groups[2]?.periods.map((p) => p.costMicros)).toEqual([0, 0, 0]);
    expect(report.daily.map((d) => [d.day, d.groupId, d.costMicros])).toEqual([
      ['2026-03-11', 'family', 20_000],
      ['2026-03-24', 'main', 1_000],
      ['2026-03-25', 'main', 7],
      ['2026-03-28', 'family', 50],
      [TODAY, 'family', 1_500_001],
    ]);
    expect(report.models.map((m) => [m.model, m.periods.map((p) => p.costMicros)])).toEqual([
      ['gpt-4.1-mini', [1_500_001, 1_500_051, 1_520_051]],
      ['claude-sonnet-4-5', [0, 7, 1_007]],
    ]);
  });

  it('lists the dearest runs of the longest period, across days and models, with when they started', () => {
    const run = store.runs.start('family', 1, 0);
    spend(String(run.id), 'family', addDays(TODAY, -1), 'gpt-4.1-mini', 400);
    spend(String(run.id), 'family', TODAY, 'gpt-4.1', 500); // the run went on past midnight
    spend('77', 'main', TODAY, 'gpt-4.1-mini', 800); // its run row was pruned
    spend('78', 'main', TODAY, 'gpt-4.1-mini', 1);
    spend('79', 'main', addDays(TODAY, -40), 'gpt-4.1-mini', 10_000_000); // outside the period

    const report = createSpendReporter(store.db)({ today: TODAY, topRuns: 2 }, CONFIG);

    expect(report.topRuns).toEqual([
      {
        kind: 'run',
        runId: String(run.id),
        groupId: 'family',
        startedAt: run.startedAt,
        firstDay: addDays(TODAY, -1),
        lastDay: TODAY,
        models: ['gpt-4.1', 'gpt-4.1-mini'],
        costMicros: 900,
        requests: 2,
        promptTokens: 20,
        completionTokens: 20,
      },
      expect.objectContaining({ runId: '77', startedAt: null, costMicros: 800 }),
    ]);
  });

  it('lists a group’s voice transcriptions as a transcription at its minute, not a run without a start', () => {
    spend('transcription:family:2026-03-31T08:15Z', 'family', TODAY, 'whisper-1', 700, 0);
    spend('transcription:main', 'main', addDays(TODAY, -2), 'whisper-1', 600, 0); // recorded before the minute was
    spend('12', 'main', TODAY, 'gpt-4.1-mini', 5);
    const report = createSpendReporter(store.db)({ today: TODAY }, CONFIG);
    expect(report.topRuns.map((r) => [r.kind, r.groupId, r.startedAt])).toEqual([
      ['transcription', 'family', '2026-03-31T08:15:00.000Z'],
      ['transcription', 'main', null],
      ['run', 'main', null],
    ]);
    const text = formatSpendReport(report).split('\n');
    expect(text.slice(text.indexOf('Most expensive runs (30 days):') + 1)).toEqual([
      '- voice transcription in family, 2026-03-31 08:15 UTC: $0.0007 (whisper-1)',
      `- voice transcription in main, ${addDays(TODAY, -2)}: $0.0006 (whisper-1)`,
      '- run 12 in main, 2026-03-31: $0.0000 (gpt-4.1-mini)',
    ]);
  });

  it('shows the Cop’s reviews of a group’s runs on their own lines, within the group’s spend', () => {
    const run = store.runs.start('family', 1, 0);
    spend(String(run.id), 'family', TODAY, 'gpt-4.1-mini', 5_000);
    spend(`review:family:${run.id}`, 'family', TODAY, 'gpt-4.1-mini', 900, 1000);
    spend(`review:family:${run.id}`, 'family', TODAY, 'gpt-4.1-mini', 800, 1000); // a second review
    spend('review:main:5', 'main', addDays(TODAY, -2), 'gpt-4.1-mini', 300, 1000);
    const report = createSpendReporter(store.db)({ today: TODAY }, CONFIG);

    const family = report.groups.find((g) => g.groupId === 'family');
    expect(family?.periods[0]).toMatchObject({ costMicros: 6_700, requests: 3 });
    expect(family?.reviews[0]).toEqual({
      costMicros: 1_700,
      requests: 2,
      promptTokens: 2000,
      completionTokens: 2000,
    });
    const main = report.groups.find((g) => g.groupId === 'main');
    expect(main?.reviews.map((p) => p.costMicros)).toEqual([0, 300, 300]);
    expect(report.totals[0]?.costMicros).toBe(6_700);

    // A run's reviews are their own entry, dated by the reviewed run's start.
    expect(report.topRuns.map((r) => [r.kind, r.runId, r.reviewedRunId, r.startedAt, r.costMicros])).toEqual([
      ['run', String(run.id), undefined, run.startedAt, 5_000],
      ['review', `review:family:${run.id}`, String(run.id), run.startedAt, 1_700],
      ['review', 'review:main:5', '5', null, 300],
    ]);
    const text = formatSpendReport(report).split('\n');
    expect(text).toContain('    of which Cop reviews: $0.0017 (2 req, 2,000 in / 2,000 out)');
    expect(text).toContain(
      `- Cop reviews of run ${run.id} in family, ${run.startedAt.slice(0, 16).replace('T', ' ')} UTC: $0.0017 (gpt-4.1-mini)`,
    );
    expect(text).toContain(`- Cop reviews of run 5 in main, ${addDays(TODAY, -2)}: $0.0003 (gpt-4.1-mini)`);
  });

  it('keeps to one group when asked, and cuts the periods at --days', () => {
    spend('1', 'family', TODAY, 'gpt-4.1-mini', 10);
    spend('2', 'main', TODAY, 'gpt-4.1-mini', 20);
    spend('3', 'main', addDays(TODAY, -2), 'gpt-4.1-mini', 40);

    const report = createSpendReporter(store.db)(
      { today: TODAY, days: 3, groupId: 'main', groups: ['main', 'family'] },
      CONFIG,
    );

    expect(report.periods.map((p) => p.days)).toEqual([1, 3]);
    expect(report.totals.map((t) => t.costMicros)).toEqual([20, 60]);
    expect(report.groups.map((g) => g.groupId)).toEqual(['main']);
    expect(report.topRuns.map((r) => r.runId)).toEqual(['3', '2']);
  });

  it('marks a model without a price, which the gateway charged at the dearest known price', () => {
    spend('1', 'main', TODAY, 'my-unknown-model', 10);
    spend('2', 'main', TODAY, 'local-free', 0);
    // A voice model is priced per minute by its own table.
    spend('transcription:main:2026-03-31T08:00Z', 'main', TODAY, 'gpt-4o-mini-transcribe', 0);
    const report = createSpendReporter(store.db)({ today: TODAY }, CONFIG);
    expect(Object.fromEntries(report.models.map((m) => [m.model, m.priced]))).toEqual({
      'my-unknown-model': false,
      'local-free': true,
      'gpt-4o-mini-transcribe': true,
    });
    expect(formatSpendReport(report)).toContain('my-unknown-model: $0.0000 / $0.0000 / $0.0000 (no price');
  });

  it('reads a cap of 0 as no percentage rather than dividing by it', () => {
    const report = createSpendReporter(store.db)(
      { today: TODAY, groups: ['main'] },
      { ...CONFIG, daily_cap_usd: 0 },
    );
    expect(report.groups[0]).toMatchObject({ todayPercent: null, cap: { micros: 0 } });
  });

  it('refuses a day that is not a calendar day and a period out of range, saying what is allowed', () => {
    const report = createSpendReporter(store.db);
    expect(() => report({ today: '2026-02-30' }, CONFIG)).toThrow(/calendar day as YYYY-MM-DD/);
    expect(() => report({ today: TODAY, days: 0 }, CONFIG)).toThrow(/from 1 to 366/);
    expect(() => report({ today: TODAY, days: 1.5 }, CONFIG)).toThrow(/from 1 to 366/);
  });

  it('shows the report as short lines: totals, each group against its cap, models and runs', () => {
    spend('1', 'family', TODAY, 'gpt-4.1-mini', 1_600_000);
    const text = formatSpendReport(
      createSpendReporter(store.db)({ today: TODAY, groups: ['family'] }, CONFIG),
    );
    expect(text.split('\n')).toEqual([
      'Spend up to 2026-03-31 (today: $1.6000, 7 days: $1.6000, 30 days: $1.6000)',
      '',
      'Groups (today against the daily cap):',
      '- family: $1.6000 of $2.0000 (80 %); 7 days $1.6000, 30 days $1.6000',
      '    gpt-4.1-mini: $1.6000 (1 req, 10 in / 10 out)',
      '',
      'Models (today / 7 days / 30 days):',
      '- gpt-4.1-mini: $1.6000 / $1.6000 / $1.6000',
      '',
      'Most expensive runs (30 days):',
      '- run 1 in family, 2026-03-31: $1.6000 (gpt-4.1-mini)',
    ]);
  });
  it('puts the groups that spent nothing in the period on one line, and says when nobody spent anything', () => {
    const report = createSpendReporter(store.db);
    const groups = ['family', 'main', 'quiet'];
    expect(formatSpendReport(report({ today: TODAY, groups }, CONFIG))).toBe(
      'Spend up to 2026-03-31 (today: $0.0000, 7 days: $0.0000, 30 days: $0.0000)\n\nNothing spent in this period.',
    );
    spend('1', 'quiet', addDays(TODAY, -29), 'gpt-4.1-mini', 100);
    const lines = formatSpendReport(report({ today: TODAY, groups }, CONFIG)).split('\n');
    expect(lines.slice(2, 6)).toEqual([
      'Groups (today against the daily cap):',
      '- quiet: $0.0000 of $5.0000 (0 %); 7 days $0.0000, 30 days $0.0001',
      '    gpt-4.1-mini: $0.0001 (1 req, 10 in / 10 out)',
      '- nothing spent: family, main',
    ]);
  });
});

describe('spend periods and money', () => {
  it('counts calendar days across month ends and leap days', () => {
    expect(addDays('2028-03-01', -1)).toBe('2028-02-29');
    expect(spendPeriods('2026-01-03', 7)[1]).toEqual({ days: 7, from: '2025-12-28', to: '2026-01-03' });
    expect(spendPeriods(TODAY, 90).map((p) => p.days)).toEqual([1, 7, 30, 90]);
    expect(spendPeriods(TODAY, 1).map((p) => p.days)).toEqual([1]);
  });

  it('writes micro-dollars as dollars to 1/100 of a cent', () => {
    expect(formatUsd(0)).toBe('$0.0000');
    expect(formatUsd(42)).toBe('$0.0000');
    expect(formatUsd(50)).toBe('$0.0001');
    expect(formatUsd(1_234_567)).toBe('$1.2346');
    expect(formatUsd(1_999_950)).toBe('$2.0000');
  });
});
