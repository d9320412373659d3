/**
 * The Cop's reviews are spend the gateway counts (DESIGN, "LLM gateway" and "Cop"): the real Cop asks through
 * the real gateway, which calls the fake provider (a real HTTP server) with the real key, reserves each
 * review against the reviewed run's group cap, records it as `review:<group>:<run>` in the host's database,
 * and refuses a review at the cap or past the run's review budget, which the Cop turns into a flag the owner
 * decides.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayConfigSchema, providerConfigSchema } from '../../../host/gateway/config.ts';
import { createGateway } from '../../../host/gateway/gateway.ts';
import { createSpendReporter } from '../../../host/gateway/spend/spend-report.ts';
import { formatSpendReport } from '../../../host/gateway/spend/spend-report-text.ts';
import { createCop } from '../../../host/security/cop/cop.ts';
import { createGatewayCopComplete } from '../../../host/security/cop/cop-gateway-complete.ts';
import type { RunIdentity } from '../../../host/security/decisions.ts';
import { createMutationReview } from '../../../host/security/policies/mutation-review.ts';
import type { HumanApproval } from '../../../host/security/policies/reviewed-decision.ts';
import { createTaintRegistry } from '../../../host/security/taint/taint.ts';
import { reply, startFakeProvider } from '../../fakes/fake-provider.ts';
import { openSpendDb } from '../../helpers/spend-db.ts';
import { systemClock } from '../../../host/time/clock.ts';

const REAL_KEY = 'sk-real-provider-key-0123456789abcdef';
const NOW = Date.UTC(2026, 10, 28, 9, 0);
const DAY = '2026-11-28';
// $1 per million tokens in and out: a token costs one micro-dollar.
const PRICES = { 'cop-model': { input_per_mtok_usd: 1, output_per_mtok_usd: 1 } };
const USAGE = { promptTokens: 1000, completionTokens: 20 };
const TASK = { cron: '0 8 * * *', prompt: 'Send the family the weather.' };

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

function recordingHuman(): HumanApproval & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async ask(_identity, operation, reason) {
      asked.push(`${operation}: ${reason}`);
      return false;
    },
  };
}

async function reviewHost(opts: { capUsd: number; maxReviews?: number }) {
  const db = openSpendDb(['main', 'family']);
  closers.push(() => db.close());
  const fake = await startFakeProvider({
    apiKey: REAL_KEY,
    responder: () => reply.text('{"flagged": false, "reason": "an ordinary task"}', { usage: USAGE }),
  });
  closers.push(() => fake.close());
  const notices: string[] = [];
  const config = gatewayConfigSchema.parse({ daily_cap_usd: opts.capUsd, prices: PRICES, retry_attempts: 0 });
  const gateway = createGateway({
    config: () => config,
    provider: providerConfigSchema.parse({ base_url: fake.openaiBaseUrl, model: 'agent-model' }),
    providerApiKey: REAL_KEY,
    usageStore: db.usage,
    clock: { ...systemClock, now: () => NOW },
    timezone: () => 'UTC',
    logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
    maxOutputTokens: 4096,
    onSpendWarning: (groupId) => notices.push(`warning ${groupId}`),
    review: { model: 'cop-model', max_output_tokens: 300, max_reviews_per_run: opts.maxReviews ?? 20 },
  });
  closers.push(() => gateway.close());
  const human = recordingHuman();
  const taint = createTaintRegistry({
    initial: () => ({ corruption: true, secret: false }),
    onTainted: () => undefined,
  });
  const reviewMutation = createMutationReview({
    cop: createCop({ complete: createGatewayCopComplete(() => gateway.review) }),
    human,
    taint,
    audit: db.store.audit,
  });
  const family = db.store.groups.get('family');
  if (!family) throw new Error('the family group was not made');
  const newRun = (): RunIdentity => ({
    runId: db.store.runs.start('family', 1, 0).id,
    group: family,
    secretMounts: [],
  });
  const rows = () =>
    db.store.db
      .prepare(
        'SELECT run_id, group_id, model, requests, prompt_tokens, completion_tokens, cost_micros FROM gateway_usage ORDER BY run_id',
      )
      .all();
  const report = () => createSpendReporter(db.store.db)({ today: DAY }, config);
  return { db, fake, gateway, human, reviewMutation, newRun, rows, report, notices };
}

describe('Cop reviews through the gateway', () => {
  it("charges each review to the reviewed run's group: its own usage row, its own line in usage, the 80 % notice", async () => {
    // 1,020 micro-dollars of 1,250 is 81 %: the review alone brings the group to the warning.
    const h = await reviewHost({ capUsd: 0.00125 });
    const run = h.newRun();
    expect(await h.reviewMutation(run, 'task.schedule', TASK)).toMatchObject({ allowed: true });
    expect(h.human.asked).toEqual([]);

    const sent = h.fake.requests.filter((r) => r.api === 'chat');
    expect(sent).toHaveLength(1);
    expect(sent[0]?.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
    expect(sent[0]?.body).toMatchObject({ model: 'cop-model', max_completion_tokens: 300 });
    expect(h.rows()).toEqual([
      {
        run_id: `review:family:${run.runId}`,
        group_id: 'family',
        model: 'cop-model',
        requests: 1,
        prompt_tokens: 1000,
        completion_tokens: 20,
        cost_micros: 1020,
      },
    ]);
    expect(h.notices).toEqual(['warning family']);

    const report = h.report();
    const family = report.groups.find((g) => g.groupId === 'family');
    expect(family?.periods[0]?.costMicros).toBe(1020);
    expect(family?.reviews[0]).toEqual({
      costMicros: 1020,
      requests: 1,
      promptTokens: 1000,
      completionTokens: 20,
    });
    const text = formatSpendReport(report);
    expect(text).toContain('    of which Cop reviews: $0.0010 (1 req, 1,000 in / 20 out)');
    expect(text).toMatch(
      new RegExp(`^- Cop reviews of run ${run.runId} in family, .*: \\$0\\.0010 \\(cop-model\\)$`, 'm'),
    );
  });

  it('refuses a review at the cap unsent, and the operation goes to the owner with the cap as the reason', async () => {
    const h = await reviewHost({ capUsd: 0.001 });
    const run = h.newRun();
    // The run itself spent the group's whole cap.
    h.db.usage.recordUsage({
      runId: String(run.runId),
      groupId: 'family',
      day: DAY,
      model: 'agent-model',
      promptTokens: 0,
      completionTokens: 0,
      costMicros: 1000,
    });
    const verdict = await h.reviewMutation(run, 'task.schedule', TASK);
    expect(verdict).toMatchObject({ allowed: false });
    const capMessage =
      'daily spend cap of $0.001 reached for group family; raise [gateway].daily_cap_usd or wait until tomorrow';
    expect(h.human.asked).toEqual([`task.schedule: the Cop flagged it: not reviewed: ${capMessage}`]);
    expect(h.fake.requests).toEqual([]);
    expect(h.rows()).toHaveLength(1); // the run's own row only
    // The gateway tells nobody of a refusal but the caller: here the owner, through the question above.
    expect(h.notices).toEqual([]);
    expect(h.db.store.audit.tail(5).map((r) => [r.operation, r.decision])).toContainEqual([
      'task.schedule.cop',
      'flagged',
    ]);
  });

  it("enforces the run's review budget: past it each operation goes to the owner unsent; another run has its own", async () => {
    const h = await reviewHost({ capUsd: 5, maxReviews: 2 });
    const first = h.newRun();
    for (let i = 0; i < 2; i++)
      expect(await h.reviewMutation(first, 'task.schedule', TASK)).toMatchObject({ allowed: true });
    expect(h.human.asked).toEqual([]);
    expect(await h.reviewMutation(first, 'task.schedule', TASK)).toMatchObject({ allowed: false });
    expect(h.human.asked).toEqual([
      'task.schedule: the Cop flagged it: not reviewed: this run has had its 2 Cop reviews ([security.cop] max_reviews_per_run)',
    ]);
    expect(h.fake.requests).toHaveLength(2);

    const second = h.newRun();
    expect(await h.reviewMutation(second, 'task.schedule', TASK)).toMatchObject({ allowed: true });
    expect(h.fake.requests).toHaveLength(3);
    expect(h.rows()).toMatchObject([
      { run_id: `review:family:${first.runId}`, requests: 2, cost_micros: 2040 },
      { run_id: `review:family:${second.runId}`, requests: 1, cost_micros: 1020 },
    ]);
  });

  it('charges a review stopped in flight its reservation, and a provider error nothing', async () => {
    const h = await reviewHost({ capUsd: 5 });
    const messages = [
      { role: 'system' as const, content: 'You are the Cop.' },
      { role: 'user' as const, content: 'Review this.' },
    ];
    h.fake.script(reply.hang());
    const stop = new AbortController();
    const pending = h.gateway.review({ runId: '41', groupId: 'family', messages, signal: stop.signal });
    const [hung] = await h.fake.waitForRequests(1);
    stop.abort();
    expect(await pending).toEqual({ ok: false, failed: 'the review was stopped' });
    // Every byte of the body as a prompt token plus the whole answer bound, at a micro-dollar a token.
    const worst = Buffer.byteLength(hung?.rawBody ?? '') + 300;
    expect(h.rows()).toEqual([
      {
        run_id: 'review:family:41',
        group_id: 'family',
        model: 'cop-model',
        requests: 1,
        prompt_tokens: 0,
        completion_tokens: 0,
        cost_micros: worst,
      },
    ]);

    h.fake.script(reply.error(500));
    expect(
      await h.gateway.review({
        runId: '42',
        groupId: 'family',
        messages,
        signal: new AbortController().signal,
      }),
    ).toEqual({ ok: false, failed: 'the provider answered HTTP 500' });
    expect(h.rows()).toHaveLength(1);
  });
});
