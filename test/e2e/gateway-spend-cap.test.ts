/**
 * Spend caps through a real container (DESIGN.md, "LLM gateway"): an agent that keeps calling the model
 * is cut off once its group's cap is reached, and the group's spend passes the cap by less than one
 * request's worst case (every prompt byte as a token plus the whole output bound).
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
    await h.addLocalGroups('alpha');
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
    expect(res.stdout).toContain('Sorry, I could not answer that.');
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
    expect(h.runs('alpha').at(-1)?.exitReason).toMatch(/daily spend cap of \$0\.00 reached for group alpha/);
    expect(h.outbox('alpha').filter((row) => row.key.startsWith('spend-cap:alpha:'))).toHaveLength(1);
  }, 120_000);
});
