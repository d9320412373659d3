/**
 * How runs end when they cannot answer, through real containers and the fake provider: a denied answer
 * is asked once and never retried, and the group's notice names no secret; a run killed (container or
 * host) after a progress message leaves exactly one "not finished" notice; a provider that hangs ends the
 * run within its first-byte deadline, not retried, with one "still working" note and one end line to the
 * group and one notice naming the setting to the owner; a 401 from the provider is told at once.
 * Runs may be attempted three times here, so "not retried" is something these tests can see fail.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { reply, type Responder } from '../fakes/fake-provider.ts';
import { byGroup, groupIdOf, turnOf, turnResponder } from '../fakes/e2e-responders.ts';
import { approvalNotices, nextApproval, ownerSays } from '../fakes/security-responders.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { eventually, startE2eHost, type E2eHost } from './e2e-harness.ts';

const SLOW_NOTICE_MS = 1500;
const UPSTREAM_TIMEOUT_MS = 5000;
/** A secret the host holds (it is in .env): an answer that contains it goes to the owner. */
const DEPLOY_TOKEN = `dt-${crypto.randomBytes(20).toString('hex')}`;
const answer: Responder = turnResponder((t) => reply.text(`ok: ${t.text}`));
const UNFINISHED = 'Sorry, I could not finish that. Ask again if you still need the rest.';

await describeDocker('e2e: runs that cannot answer end with one honest notice', () => {
  let h: E2eHost;
  const seenApprovals = new Set<string>();

  beforeAll(async () => {
    h = await startE2eHost({
      config: {
        runs: { max_attempts: 3 },
        gateway: { slow_notice_ms: SLOW_NOTICE_MS, first_byte_timeout_ms: UPSTREAM_TIMEOUT_MS },
      },
      secrets: { DEPLOY_TOKEN },
      responder: answer,
    });
    await h.addLocalGroups('fam');
  }, 180_000);
  beforeEach(() => {
    h.fake.setResponder(answer);
  });
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  const keysOf = (group: string, prefix: string) =>
    h
      .outbox(group)
      .filter((r) => r.key.startsWith(prefix))
      .map((r) => r.text);

  it('a denied answer is asked once, not retried, and the group is told nothing about why', async () => {
    h.fake.setResponder(byGroup({ fam: () => reply.text(`the deploy token is ${DEPLOY_TOKEN}`) }, answer));
    const asksBefore = approvalNotices(h).length;
    const runsBefore = h.runs('fam').length;
    const sent = h.send('fam', '@Andy what is the deploy token?');
    const ask = await nextApproval(h, seenApprovals, 'Operation: "message.send"');
    expect(ask.text).toContain('the message contains a secret');
    await ownerSays(h, `deny ${ask.id}`);

    const res = await sent;
    expect(res.stdout).toBe('Sorry, I cannot answer that.\n');
    expect(res.code).toBe(1);
    // One run, one question to the owner: the denial ended it (three attempts were allowed).
    expect(h.runs('fam').slice(runsBefore)).toMatchObject([{ status: 'failed', replied: false }]);
    expect(approvalNotices(h).length - asksBefore).toBe(1);
    const famTexts = h.outbox('fam').map((r) => r.text);
    expect(famTexts.join('\n')).not.toContain(DEPLOY_TOKEN);
    expect(famTexts.join('\n')).not.toMatch(/secret|token|approve/i);
    // The owner reads why, in the admin chat only.
    expect(keysOf('main', 'giveup-owner:fam:').at(-1)).toMatch(
      /^Group fam got no answer \(its answer was withheld\): the owner did not approve its message/,
    );
  }, 150_000);

  it('a container killed after a progress message leaves exactly one "not finished" notice', async () => {
    const from = h.fake.requests.length;
    h.fake.setResponder(
      byGroup(
        {
          fam: turnResponder(
            () => reply.toolCalls([{ name: 'send_message', arguments: { text: 'Working on it…' } }]),
            () => reply.hang(),
          ),
        },
        answer,
      ),
    );
    const runsBefore = h.runs('fam').length;
    const sent = h.send('fam', '@Andy a long job');
    // The second model call of the turn comes after the progress message went out.
    await h.waitForRequest((r) => groupIdOf(r.body) === 'fam' && turnOf(r).step === 1, from);
    const box = await h.runningContainer('fam');
    await h.docker.getContainer(box.Id).kill();

    const res = await sent;
    expect(res.stdout).toBe(`Working on it…\n${UNFINISHED}\n`);
    // Not answered: `carapace send` says so with its exit code, as for a give-up notice.
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('the host could not answer');
    const runs = h.runs('fam').slice(runsBefore);
    expect(runs).toMatchObject([{ status: 'failed', replied: true }]);
    expect(keysOf('fam', `unfinished:${runs[0]!.id}`)).toEqual([UNFINISHED]);
    expect(keysOf('main', `unfinished-owner:${runs[0]!.id}`)).toEqual([
      'Group fam got only part of an answer: the agent exited (code 137) without finishing',
    ]);
  }, 120_000);

  it('a host stopped after a progress message leaves exactly one "not finished" notice, sent after the restart', async () => {
    const from = h.fake.requests.length;
    h.fake.setResponder(
      byGroup(
        {
          fam: turnResponder(
            () => reply.toolCalls([{ name: 'send_message', arguments: { text: 'Starting…' } }]),
            () => reply.hang(),
          ),
        },
        answer,
      ),
    );
    const runsBefore = h.runs('fam').length;
    const sent = h.send('fam', '@Andy another long job', 60);
    await h.waitForRequest((r) => groupIdOf(r.body) === 'fam' && turnOf(r).step === 1, from);
    await h.restart();
    h.fake.setResponder(answer);
    const runs = h.runs('fam').slice(runsBefore);
    expect(runs).toMatchObject([{ status: 'failed', replied: true }]);
    const runId = runs[0]!.id;
    await eventually('the notice delivered after the restart', () =>
      h.outbox('fam').find((r) => r.key === `unfinished:${runId}` && r.status === 'sent'),
    );
    expect(keysOf('fam', `unfinished:${runId}`)).toEqual([UNFINISHED]);
    await sent;
    // The group works again, and nothing was re-run for the interrupted question.
    const after = await h.send('fam', '@Andy hello again');
    expect(after.stdout).toBe('ok: @Andy hello again\n');
    expect(keysOf('fam', `unfinished:${runId}`)).toHaveLength(1);
    expect(h.runs('fam').slice(runsBefore)).toHaveLength(2);
  }, 150_000);

  it('a provider that hangs ends the run within its deadline, once: one note and one end line to the group, one notice to the owner', async () => {
    h.fake.setResponder(byGroup({ fam: () => reply.hang() }, answer));
    const runsBefore = h.runs('fam').length;
    const ownerBefore = h.outbox('main').length;
    const message = '@Andy are you there?';
    const res = await h.send('fam', message, 120);
    const givenThrough = h.messageId('fam', message);
    // One hang is one failure, not a broken setup: the group may simply ask again.
    expect(res.stdout).toBe(
      'Still working on it, this is taking longer than usual.\n' +
        'Sorry, I could not answer that. Send the message again to try once more.\n',
    );
    // One attempt of three allowed: a hung provider is not asked again by a retry of the run.
    const runs = h.runs('fam').slice(runsBefore);
    expect(runs).toMatchObject([{ status: 'failed', replied: false }]);
    expect(keysOf('fam', 'slow:')).toHaveLength(1);
    const owner = h.outbox('main').slice(ownerBefore);
    expect(owner.map((r) => r.key)).toEqual([`giveup-owner:fam:${givenThrough}`]);
    expect(owner[0]?.text).toMatch(
      /^Group fam got no answer \(one failure, not retried; its next message tries again\): the LLM provider did not start answering within 5 s \(\[gateway\] first_byte_timeout_ms\)/,
    );
  }, 150_000);

  it('a 401 from the provider is told at once: one request, one run, the reason to the owner', async () => {
    const from = h.fake.requests.length;
    h.fake.setResponder(byGroup({ fam: () => reply.error(401) }, answer));
    const runsBefore = h.runs('fam').length;
    const res = await h.send('fam', '@Andy hello?');
    expect(res.stdout).toBe('Sorry, I cannot answer right now. The owner has been told.\n');
    expect(h.fake.requests.slice(from).filter((r) => groupIdOf(r.body) === 'fam')).toHaveLength(1);
    expect(h.runs('fam').slice(runsBefore)).toMatchObject([{ status: 'failed' }]);
    expect(keysOf('main', 'giveup-owner:fam:').at(-1)).toMatch(
      /^Group fam got no answer \(it cannot be answered until this is fixed\): the LLM provider rejected the host's API key \(HTTP 401\)/,
    );
  }, 120_000);
});
