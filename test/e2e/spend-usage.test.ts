/**
 * Spend you can see (issue 27): after scripted runs through real containers, the real gateway and the fake
 * provider, `carapace usage` and the admin chat's `usage` show exactly what the gateway recorded, to the
 * micro-dollar, and both equal the cost worked out here from the scripted token counts and the prices.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SpendReport } from '../../host/gateway/spend/spend-report.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { bash, ownerSays } from '../fakes/security-responders.ts';
import { byGroup, turnResponder } from '../fakes/e2e-responders.ts';
import { reply } from '../fakes/fake-provider-script.ts';
import { startE2eHost, type E2eHost } from './e2e-harness.ts';

// Prices whose products are not whole micro-dollars, so rounding per request shows.
const PRICE = { input_per_mtok_usd: 0.15, output_per_mtok_usd: 0.6 };
const ALPHA = { promptTokens: 1234, completionTokens: 567 }; // 525.3 µ$ → 525 per request
const BETA_TOOL = { promptTokens: 2001, completionTokens: 33 }; // 319.95 µ$ → 320
const BETA_TEXT = { promptTokens: 2345, completionTokens: 77 }; // 397.95 µ$ → 398
/** The oracle: the price per token as the gateway documents it, rounded per request. */
const cost = (u: { promptTokens: number; completionTokens: number }) =>
  Math.round(u.promptTokens * PRICE.input_per_mtok_usd + u.completionTokens * PRICE.output_per_mtok_usd);

await describeDocker('e2e spend: carapace usage equals the gateway’s own records', () => {
  let h: E2eHost;
  beforeAll(async () => {
    h = await startE2eHost({
      config: {
        runs: { max_attempts: 1 },
        gateway: { daily_cap_usd: 1, group_caps_usd: { beta: 0.5 }, prices: { 'fake-model': PRICE } },
      },
    });
    await h.addLocalGroups('alpha', 'beta');
    h.fake.setResponder(
      byGroup({
        alpha: turnResponder(() => reply.text('alpha answers', { usage: ALPHA })),
        beta: turnResponder(
          () => reply.toolCalls([bash('echo counted')], { usage: BETA_TOOL }),
          () => reply.text('beta answers', { usage: BETA_TEXT }),
        ),
      }),
    );
    // Two runs in alpha (one request each), one in beta (a tool step, then the answer).
    for (const [group, text] of [
      ['alpha', '@Andy first'],
      ['alpha', '@Andy second'],
      ['beta', '@Andy with a tool'],
    ] as const) {
      const res = await h.send(group, text);
      expect(res.stdout).toContain(`${group} answers`);
    }
  }, 240_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  const recorded = (sql: string) => h.host.store.db.prepare(sql).all() as Record<string, number | string>[];

  it('records what the scripted runs cost, to the micro-dollar', () => {
    expect(
      recorded('SELECT group_id, SUM(cost_micros) AS c FROM gateway_usage GROUP BY group_id ORDER BY 1'),
    ).toEqual([
      { group_id: 'alpha', c: 2 * cost(ALPHA) },
      { group_id: 'beta', c: cost(BETA_TOOL) + cost(BETA_TEXT) },
    ]);
    expect(2 * cost(ALPHA)).toBe(1050);
    expect(cost(BETA_TOOL) + cost(BETA_TEXT)).toBe(718);
  });

  it('carapace usage --json shows those records per group, model and run, against each cap', async () => {
    const res = await h.cli(['usage', '--json']);
    expect(res.code).toBe(0);
    const report = JSON.parse(res.stdout) as SpendReport;
    const last = report.periods.length - 1;
    expect(report.periods.map((p) => p.days)).toEqual([1, 7, 30]);

    const groups = Object.fromEntries(report.groups.map((g) => [g.groupId, g]));
    expect(groups.alpha?.periods[last]).toMatchObject({
      costMicros: 1050,
      requests: 2,
      promptTokens: 2 * ALPHA.promptTokens,
      completionTokens: 2 * ALPHA.completionTokens,
      capMicros: 30_000_000,
    });
    expect(groups.beta?.periods[last]).toMatchObject({ costMicros: 718, requests: 2, capMicros: 15_000_000 });
    expect(groups.beta?.cap).toEqual({
      usd: 0.5,
      micros: 500_000,
      setting: '[gateway].group_caps_usd."beta"',
    });
    // The admin group is listed with its cap though it spent nothing.
    expect(groups.main?.periods[last]?.costMicros).toBe(0);
    expect(report.totals[last]?.costMicros).toBe(1768);
    expect(report.models.map((m) => [m.model, m.priced, m.periods[last]?.costMicros])).toEqual([
      ['fake-model', true, 1768],
    ]);

    // The dearest runs: each run's figure is the sum of its own records.
    const perRun = recorded(
      'SELECT run_id, group_id, SUM(cost_micros) AS c FROM gateway_usage GROUP BY run_id ORDER BY c DESC, run_id',
    );
    expect(report.topRuns.map((r) => ({ run_id: r.runId, group_id: r.groupId, c: r.costMicros }))).toEqual(
      perRun,
    );
    expect(report.topRuns[0]).toMatchObject({ groupId: 'beta', costMicros: 718, requests: 2 });
    expect(report.topRuns[0]?.runId).toBe(String(h.runs('beta')[0]?.id));
  }, 60_000);

  it('shows the same report as text in the terminal and in the admin chat', async () => {
    const terminal = await h.cli(['usage']);
    expect(terminal.code).toBe(0);
    expect(terminal.stdout).toMatch(
      /^- beta: \$0\.0007 of \$0\.5000 \(0 %\); 7 days \$0\.0007, 30 days \$0\.0007$/m,
    );
    const chat = await ownerSays(h, 'usage');
    expect(chat).toBe(terminal.stdout.trimEnd());

    const one = await h.cli(['usage', '--group', 'alpha', '--days', '7']);
    expect(one.stdout.split('\n')[0]).toBe(
      `Spend up to ${JSON.parse((await h.cli(['usage', '--json'])).stdout).today} (today: $0.0011, 7 days: $0.0011)`,
    );
    expect(one.stdout).not.toContain('beta');
  }, 60_000);
});
