/**
 * Spend caps through a real container (DESIGN.md, "LLM gateway"): an agent that keeps calling the model
 * is cut off once its group's cap is reached, and the group's spend passes the cap by less than one
 * request's worst case (every prompt byte as a token plus the whole output bound). A run whose answer
 * crossed the cap delivers it without a word about the cap; the next message is refused without a run.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeDocker } from '../helpers/docker-available.ts';
import { bash, securityResponder } from '../fakes/security-responders.ts';
import { turnResponder } from '../fakes/e2e-responders.ts';
import { reply } from '../fakes/fake-provider-script.ts';
import { startE2eHost, type E2eHost } from './e2e-harness.ts';

const CAP_USD = 0.002;
const MAX_OUTPUT_TOKENS = 1024;
// $1 per million tokens in and out: a token costs one micro-dollar.
const PRICES = { 'fake-model': { input_per_mtok_usd: 1, output_per_mtok_usd: 1 } };

await describeDocker('e2e gateway: a spend cap bounds what a container can spend', () => {
  let h: E2eHost;
  beforeAll(async () => {
    h = await startE2eHost({
      config: {
        runs: { max_attempts: 1, max_output_tokens: MAX_OUTPUT_TOKENS },
        gateway: { daily_cap_usd: CAP_USD, prices: PRICES },
      },
    });
    await h.addLocalGroups('alpha', 'gamma');
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  it('stops an agent that keeps calling the model once the cap is reached, overshooting by less than one reservation', async () => {
    const from = h.fake.requests.length;
    // Every answer asks for another tool step: only the cap can end this run early.
    h.fake.setResponder(
      securityResponder({
        alpha: turnResponder(() => reply.toolCalls([bash('echo again')])),
      }),
    );
    const res = await h.send('alpha', '@Andy keep going');
    expect(res.stdout).toContain('reached its daily spending limit');
    expect(res.stdout).not.toContain('Sorry');
    expect(res.stderr).toContain('not answered: daily spend cap of $0.002 reached for group alpha');
    expect(res.code).toBe(1);
    const forwarded = h.fake.requests.slice(from).filter((r) => r.api === 'chat');
    const spent = h.host.store.db
      .prepare('SELECT COALESCE(SUM(cost_micros), 0) AS spent FROM gateway_usage WHERE group_id = ?')
      .get('alpha') as { spent: number };
    const worstRequest = Math.max(...forwarded.map((r) => Buffer.byteLength(r.rawBody))) + MAX_OUTPUT_TOKENS;
    expect(forwarded.length).toBeGreaterThan(1);
    expect(spent.spent).toBeGreaterThanOrEqual(CAP_USD * 1_000_000);
    expect(spent.spent - CAP_USD * 1_000_000).toBeLessThan(worstRequest);
    // Every forwarded request carried the output bound.
    for (const r of forwarded)
      expect((r.body as { max_completion_tokens?: number }).max_completion_tokens).toBe(MAX_OUTPUT_TOKENS);
    // The refusal named the cap to the agent, and the group heard about the cap once.
    expect(h.runs('alpha').at(-1)?.exitReason).toMatch(/daily spend cap of \$0\.002 reached for group alpha/);
    expect(h.outbox('alpha').filter((row) => row.key.startsWith('spend-cap:alpha:'))).toHaveLength(1);
  }, 120_000);

  it('delivers the answer that crossed the cap with no word of the cap, then refuses the next message without a run', async () => {
    // One answer costs more than the day's cap.
    h.fake.setResponder(
      securityResponder({
        gamma: () =>
          reply.text('Pasta at eight.', { usage: { promptTokens: 5_000, completionTokens: 1_000 } }),
      }),
    );
    const first = await h.send('gamma', '@Andy what is for dinner?');
    expect(first.stdout).toBe('Pasta at eight.\n');
    expect(first.code).toBe(0);
    expect(h.outbox('gamma').map((row) => row.text)).toEqual(['Pasta at eight.']);

    const from = h.fake.requests.length;
    const second = await h.send('gamma', '@Andy and dessert?');
    expect(second.stdout).toBe(
      'This group reached its daily spending limit; I cannot answer until tomorrow.\n',
    );
    expect(second.stderr).toContain('not answered: daily spend cap of $0.002 reached for group gamma');
    expect(second.code).toBe(1);
    expect(h.runs('gamma')).toHaveLength(1);
    expect(h.fake.requests.slice(from).filter((r) => r.api === 'chat')).toEqual([]);
  }, 120_000);
});

await describeDocker('e2e gateway: the cap binds with the price table that ships, and trips quietly', () => {
  let h: E2eHost;
  beforeAll(async () => {
    h = await startE2eHost({
      // No [gateway.prices]: a model of the shipped table; retries on (the default 3 attempts).
      config: {
        provider: { model: 'openai/gpt-4.1-mini' },
        runs: { max_output_tokens: MAX_OUTPUT_TOKENS },
        gateway: { daily_cap_usd: 0.001 },
      },
    });
    await h.addLocalGroups('beta');
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  it('trips with one line to the group, one notice to the owner, no retries and nothing contradicting it', async () => {
    h.fake.setResponder(
      securityResponder({ beta: turnResponder(() => reply.toolCalls([bash('echo again')])) }),
    );
    const res = await h.send('beta', '@Andy keep going');
    const spent = h.host.store.db
      .prepare('SELECT COALESCE(SUM(cost_micros), 0) AS spent FROM gateway_usage WHERE group_id = ?')
      .get('beta') as { spent: number };
    expect(spent.spent).toBeGreaterThanOrEqual(1_000);
    const lines = h.outbox('beta').map((row) => row.text);
    expect(lines).toEqual(['This group reached its daily spending limit; I cannot answer until tomorrow.']);
    expect(res.stdout).not.toMatch(/again to retry|Sorry/);
    // One run: a capped run is not tried again.
    expect(h.runs('beta')).toHaveLength(1);
    expect(h.runs('beta')[0]?.exitReason).toMatch(/daily spend cap of \$0\.001 reached for group beta/);
    // Besides the cap's notice the owner may have had the 80 % warning (spend-notices.test.ts), once.
    const capNotices = () =>
      h
        .outbox('main')
        .filter((row) => row.text.includes('beta') && !row.key.startsWith('spend-warning-owner:'));
    const owner = capNotices();
    expect(owner.map((row) => row.text)).toEqual([
      'Group beta gets no answers until tomorrow: daily spend cap of $0.001 reached for group beta; raise [gateway].daily_cap_usd or wait until tomorrow.',
    ]);
    // A second message the same day: no new line, no new notice, no run; the CLI still says why.
    const from = h.fake.requests.length;
    const again = await h.send('beta', '@Andy and now?');
    expect(again.stdout).toBe('');
    expect(again.stderr).toContain('not answered: daily spend cap of $0.001 reached for group beta');
    expect(again.code).toBe(1);
    expect(h.runs('beta')).toHaveLength(1);
    expect(h.outbox('beta')).toHaveLength(1);
    expect(capNotices()).toHaveLength(1);
    expect(
      h.outbox('main').filter((row) => row.key.startsWith('spend-warning-owner:beta:')).length,
    ).toBeLessThan(2);
    expect(h.fake.requests.slice(from).filter((r) => r.api === 'chat')).toEqual([]);
  }, 180_000);
});

await describeDocker(
  'e2e gateway: a model without a price is charged the ceiling, and a small cap stops it',
  () => {
    let h: E2eHost;
    const CEILING = { input: 150, output: 600 }; // o1-pro's rates, the dearest the shipped table knows
    beforeAll(async () => {
      h = await startE2eHost({
        // A model neither the table nor [gateway.prices] knows (the harness prices only fake-model).
        config: {
          provider: { model: 'brand-new-model' },
          runs: { max_attempts: 1, max_output_tokens: MAX_OUTPUT_TOKENS },
          gateway: { daily_cap_usd: 0.01 },
        },
      });
      await h.addLocalGroups('gamma');
    }, 180_000);
    afterAll(async () => {
      await h?.stop();
    }, 60_000);

    it('stops the run within one reservation, charging its tokens at the ceiling', async () => {
      const from = h.fake.requests.length;
      h.fake.setResponder(
        securityResponder({ gamma: turnResponder(() => reply.toolCalls([bash('echo again')])) }),
      );
      const res = await h.send('gamma', '@Andy keep going');
      expect(res.stdout).toContain('reached its daily spending limit');
      const forwarded = h.fake.requests.slice(from).filter((r) => r.api === 'chat');
      const rows = h.host.store.db
        .prepare(
          'SELECT model, prompt_tokens AS prompt, completion_tokens AS completion, cost_micros AS cost FROM gateway_usage WHERE group_id = ?',
        )
        .all('gamma') as { model: string; prompt: number; completion: number; cost: number }[];
      // One request's real cost at the ceiling is already past $0.01: the next one is refused unsent.
      expect(forwarded).toHaveLength(1);
      expect(rows).toHaveLength(1);
      const [row] = rows as [(typeof rows)[number]];
      expect(row.model).toBe('brand-new-model');
      expect(row.cost).toBe(row.prompt * CEILING.input + row.completion * CEILING.output);
      const spent = row.cost;
      const worstRequest =
        Buffer.byteLength((forwarded[0] as { rawBody: string }).rawBody) * CEILING.input +
        MAX_OUTPUT_TOKENS * CEILING.output;
      expect(spent).toBeGreaterThanOrEqual(10_000);
      expect(spent - 10_000).toBeLessThan(worstRequest);
      expect(h.runs('gamma').at(-1)?.exitReason).toMatch(
        /daily spend cap of \$0\.01 reached for group gamma/,
      );
    }, 180_000);
  },
);
