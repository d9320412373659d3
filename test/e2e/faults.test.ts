/**
 * Faults on the way of a turn: a provider that fails, rate-limits or hangs, and a container killed in
 * the middle of its run. The group always gets an answer or a clear notice, and the next message works.
 */
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { reply, type Responder } from '../fakes/fake-provider.ts';
import { byGroup, turnResponder } from '../fakes/e2e-responders.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { startE2eHost, type E2eHost } from './e2e-harness.ts';

// Long enough that the kill test's held request outlives a slow `docker kill`, short enough to wait out.
const UPSTREAM_TIMEOUT_MS = 3000;
const answer: Responder = turnResponder((t) => reply.text(`ok: ${t.text}`));

await describeDocker('e2e: faults between the group, the container and the provider', () => {
  let h: E2eHost;

  beforeAll(async () => {
    h = await startE2eHost({
      config: {
        // One attempt per run: a failure must reach the group as a notice, not be retried away.
        runs: { max_attempts: 1 },
        gateway: { first_byte_timeout_ms: UPSTREAM_TIMEOUT_MS, retry_base_ms: 50 },
      },
      responder: answer,
    });
  }, 180_000);
  beforeEach(() => {
    h.fake.setResponder(answer);
  });
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  /** Sends and expects the ordinary answer: the group works (again). */
  async function expectAnswered(text: string) {
    const res = await h.send('main', text);
    expect(res.stdout).toBe(`ok: ${text}\n`);
    expect(res.code).toBe(0);
  }

  it('a provider 500 is retried by the gateway and the reply still arrives', async () => {
    const from = h.fake.requests.length;
    const starts = h.started('main').length;
    h.fake.script(reply.error(500));
    await expectAnswered('survive a 500');
    const seen = h.fake.requests.slice(from);
    expect(seen).toHaveLength(2);
    // The same request again, from the gateway: no second container, no second run.
    expect(seen[1]?.rawBody).toBe(seen[0]?.rawBody);
    expect(h.logEntries('gateway: retrying upstream request').slice(-1)).toMatchObject([
      { failure: 'HTTP 500', attempt: 1 },
    ]);
    expect(h.started('main').length - starts).toBe(1);
    expect(h.runs('main').at(-1)).toMatchObject({ status: 'succeeded', attempt: 1 });
  }, 60_000);

  it('a 429 with retry-after: 1 is retried after the second the provider asked for', async () => {
    const from = h.fake.requests.length;
    h.fake.script(reply.error(429, { headers: { 'retry-after': '1' } }));
    await expectAnswered('survive a 429');
    const seen = h.fake.requests.slice(from);
    expect(seen).toHaveLength(2);
    expect(seen[1]?.rawBody).toBe(seen[0]?.rawBody);
    // The gateway's backoff is 50 ms here; only the header explains a full second.
    expect(h.logEntries('gateway: retrying upstream request').slice(-1)).toMatchObject([
      { failure: 'HTTP 429', delayMs: 1000 },
    ]);
    expect((seen[1]?.receivedAt ?? 0) - (seen[0]?.receivedAt ?? 0)).toBeGreaterThanOrEqual(990);
  }, 60_000);

  it('a provider that hangs ends in a clear notice to the group; the next message works', async () => {
    const from = h.fake.requests.length;
    h.fake.setResponder(byGroup({ main: () => reply.hang() }));
    const res = await h.send('main', 'are you there?');
    expect(res.stdout).toMatch(
      new RegExp(
        `^Sorry, I could not answer that \\(the LLM provider did not start answering within ${UPSTREAM_TIMEOUT_MS / 1000} s \\(\\[gateway\\] first_byte_timeout_ms\\) \\(agent error: .*\\)\\)\\. That was one failure, not retried: your next message tries again\\.\\n$`,
      ),
    );
    // A failure notice is not an answer: send says so in its exit code.
    expect(res.code).toBe(1);
    expect(h.runs('main').at(-1)).toMatchObject({ status: 'failed', replied: false });
    // One upstream request, given up (aborted) at the timeout: neither the gateway nor the agent's
    // client retried a provider that hangs, which would multiply the wait.
    const hung = h.fake.requests.slice(from);
    expect(hung).toHaveLength(1);
    await h.fake.waitForEnd(hung[0]!);
    expect(hung[0]?.aborted).toBe(true);

    h.fake.setResponder(answer);
    await expectAnswered('and now?');
  }, 90_000);

  it('a container killed mid-run is reported to the group; the next message is answered', async () => {
    const from = h.fake.requests.length;
    h.fake.setResponder(byGroup({ main: () => reply.hang() }));
    const sent = h.send('main', 'this run gets killed');
    const held = await h.waitForRequest(() => true, from);
    const box = await h.runningContainer('main');
    expect(box.Name).toMatch(/^\/carapace-main-\d+-[0-9a-f]{8}$/);
    await h.docker.getContainer(box.Id).kill();

    const res = await sent;
    expect(res.stdout).toBe(
      'Sorry, I could not answer that (the agent exited (code 137) without finishing). Send the message again to retry.\n',
    );
    // A failure notice is not an answer: send says so in its exit code.
    expect(res.code).toBe(1);
    expect(h.runs('main').at(-1)).toMatchObject({
      status: 'failed',
      exitReason: 'the agent exited (code 137) without finishing',
    });
    // The container went away, so the gateway dropped the provider request it was waiting on.
    await h.fake.waitForEnd(held);
    expect(held.aborted).toBe(true);
    const left = await h.docker.listContainers({ all: true, filters: { id: [box.Id] } });
    expect(left).toEqual([]);

    h.fake.setResponder(answer);
    await expectAnswered('still there?');
  }, 90_000);
});
