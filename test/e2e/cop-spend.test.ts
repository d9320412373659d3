/**
 * The Cop's reviews count against the cap (DESIGN.md, "LLM gateway" and "Cop"), through real containers, the
 * real gateway and the fake provider: one model answer with many escalated commands in a corrupted run buys
 * one review per command; the reviews are charged to the group, a review the cap (or the run's review budget)
 * refuses is never sent and goes to the owner instead, and `carapace usage` shows the reviews' cost on their
 * own lines.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SpendReport } from '../../host/gateway/spend/spend-report.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { byGroup, turnResponder } from '../fakes/e2e-responders.ts';
import { reply, type Responder } from '../fakes/fake-provider-script.ts';
import {
  auditMark,
  auditSince,
  bash,
  copReviewOf,
  copReviews,
  nextApproval,
  ownerSays,
  resultsOf,
  RESULT_SEPARATOR,
} from '../fakes/security-responders.ts';
import { startE2eHost, type E2eHost } from './e2e-harness.ts';

// $1 per million tokens in and out: a token costs one micro-dollar, so every figure below is exact.
const PRICES = { 'fake-model': { input_per_mtok_usd: 1, output_per_mtok_usd: 1 } };
const AGENT_USAGE = { promptTokens: 2000, completionTokens: 50 }; // 2,050 µ$ a model call
const COP_USAGE = { promptTokens: 1000, completionTokens: 10 }; // 1,010 µ$ a review
const ALPHA_CAP_USD = 0.005;
const MAX_REVIEWS = 5;

const tag = () => crypto.randomBytes(4).toString('hex');

/** Agents by group, every answer with AGENT_USAGE; the Cop passes everything, each review with COP_USAGE. */
function priced(agents: Record<string, Responder>): Responder {
  const agent = byGroup(agents);
  return (request) =>
    copReviewOf(request)
      ? reply.text('{"flagged": false, "reason": "an ordinary command"}', { usage: COP_USAGE })
      : agent(request);
}

/** One model answer with every command at once, then a reply with their results. */
const manyCommands = (commands: string[]): Responder =>
  turnResponder(
    () => reply.toolCalls(commands.map(bash), { usage: AGENT_USAGE }),
    (t) => reply.text(t.toolResults.join(RESULT_SEPARATOR), { usage: AGENT_USAGE }),
  );

/** A command the bash gate escalates (mkfifo) that leaves `name` behind when it runs. */
const escalated = (name: string) => `touch ${name} && mkfifo fifo-${name}`;

await describeDocker('e2e Cop spend: reviews count against the cap and the run’s review budget', () => {
  let h: E2eHost;
  const seenApprovals = new Set<string>();
  const ran = (group: string, file: string) => fs.existsSync(path.join(h.paths.groupsDir, group, file));
  const spent = (group: string) =>
    h.host.store.db
      .prepare(
        'SELECT run_id, requests, prompt_tokens, completion_tokens, cost_micros FROM gateway_usage WHERE group_id = ? ORDER BY run_id',
      )
      .all(group) as {
      run_id: string;
      requests: number;
      prompt_tokens: number;
      completion_tokens: number;
      cost_micros: number;
    }[];

  beforeAll(async () => {
    h = await startE2eHost({
      config: {
        runs: { max_attempts: 1 },
        gateway: { prices: PRICES, daily_cap_usd: 1, group_caps_usd: { alpha: ALPHA_CAP_USD } },
        security: { cop: { max_reviews_per_run: MAX_REVIEWS } },
      },
    });
    await h.addLocalGroups('alpha', 'beta');
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  it('a run that needs more reviews than the cap allows ends with the owner asked, and usage shows the reviews’ cost', async () => {
    const t = tag();
    const names = ['a', 'b', 'c', 'd'].map((n) => `${n}-${t}`);
    const from = h.fake.requests.length;
    h.fake.setResponder(priced({ alpha: manyCommands(names.map(escalated)) }));
    const mark = auditMark(h);
    const sent = h.send('alpha', '@Andy run four commands');

    // 2,050 for the model's answer, then 1,010 a review: the third review crosses the 5,000 µ$ cap, and the
    // fourth is refused unsent, so the owner decides that command.
    const ask = await nextApproval(h, seenApprovals, `d-${t}`);
    expect(ask.text).toMatch(
      /the Cop flagged it: not reviewed: daily spend cap of \$[\d.]+ reached for group alpha; raise \[gateway\]\.group_caps_usd/,
    );
    expect(await ownerSays(h, `deny ${ask.id}`)).toBe(`Denied ${ask.id}: bash will not run.`);

    const res = await sent;
    // The run's next model call is refused at the cap: the group hears the cap's line, not a failure.
    expect(res.stdout).toContain('reached its daily spending limit');
    expect(names.map((n) => ran('alpha', n))).toEqual([true, true, true, false]);
    expect(copReviews(h.fake.requests, from)).toHaveLength(3);

    const runId = h.runs('alpha').at(-1)?.id;
    expect(spent('alpha')).toEqual([
      { run_id: String(runId), requests: 1, prompt_tokens: 2000, completion_tokens: 50, cost_micros: 2050 },
      {
        run_id: `review:alpha:${runId}`,
        requests: 3,
        prompt_tokens: 3000,
        completion_tokens: 30,
        cost_micros: 3030,
      },
    ]);
    expect(
      auditSince(h, mark)
        .filter((r) => r.runId === runId && r.operation === 'bash.cop')
        .map((r) => [r.decision, (r.reason ?? '').replace(/\$[\d.]+/, '$X')]),
    ).toEqual([
      ['passed', 'an ordinary command'],
      ['passed', 'an ordinary command'],
      ['passed', 'an ordinary command'],
      [
        'flagged',
        'not reviewed: daily spend cap of $X reached for group alpha; raise [gateway].group_caps_usd."alpha" or wait until tomorrow',
      ],
    ]);

    const report = JSON.parse((await h.cli(['usage', '--json'])).stdout) as SpendReport;
    const alpha = report.groups.find((g) => g.groupId === 'alpha');
    expect(alpha?.periods[0]?.costMicros).toBe(5080);
    expect(alpha?.reviews[0]).toEqual({
      costMicros: 3030,
      requests: 3,
      promptTokens: 3000,
      completionTokens: 30,
    });
    const text = (await h.cli(['usage', '--group', 'alpha'])).stdout;
    expect(text).toContain('    of which Cop reviews: $0.0030 (3 req, 3,000 in / 30 out)');
    expect(text).toMatch(
      new RegExp(`^- Cop reviews of run ${runId} in alpha, .*: \\$0\\.0030 \\(fake-model\\)$`, 'm'),
    );
  }, 180_000);

  it('past the run’s review budget each further command goes to the owner unreviewed; the next run has its own', async () => {
    const t = tag();
    const names = Array.from({ length: MAX_REVIEWS + 1 }, (_, i) => `r${i}-${t}`);
    const from = h.fake.requests.length;
    h.fake.setResponder(priced({ beta: manyCommands(names.map(escalated)) }));
    const sent = h.send('beta', '@Andy run six commands');

    const ask = await nextApproval(h, seenApprovals, `r${MAX_REVIEWS}-${t}`);
    expect(ask.text).toContain(
      `the Cop flagged it: not reviewed: this run has had its ${MAX_REVIEWS} Cop reviews ([security.cop] max_reviews_per_run)`,
    );
    expect(await ownerSays(h, `approve ${ask.id}`)).toBe(
      `Approved ${ask.id}: bash may run once, with the parameters shown.`,
    );
    const res = await sent;
    expect(resultsOf(res.stdout)).toEqual(names.map(() => 'exit code 0'));
    expect(names.every((n) => ran('beta', n))).toBe(true);
    expect(copReviews(h.fake.requests, from)).toHaveLength(MAX_REVIEWS);

    // A new run starts with a fresh budget.
    const again = `again-${t}`;
    h.fake.setResponder(priced({ beta: manyCommands([escalated(again)]) }));
    const fromAgain = h.fake.requests.length;
    const second = await h.send('beta', '@Andy one more');
    expect(resultsOf(second.stdout)).toEqual(['exit code 0']);
    expect(copReviews(h.fake.requests, fromAgain)).toHaveLength(1);
    const [first, next] = h.runs('beta').slice(-2);
    expect(spent('beta').filter((r) => r.run_id.startsWith('review:'))).toEqual([
      {
        run_id: `review:beta:${first?.id}`,
        requests: MAX_REVIEWS,
        prompt_tokens: MAX_REVIEWS * 1000,
        completion_tokens: MAX_REVIEWS * 10,
        cost_micros: MAX_REVIEWS * 1010,
      },
      {
        run_id: `review:beta:${next?.id}`,
        requests: 1,
        prompt_tokens: 1000,
        completion_tokens: 10,
        cost_micros: 1010,
      },
    ]);
  }, 180_000);
});
