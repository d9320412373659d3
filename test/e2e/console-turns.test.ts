/**
 * Turns through the local console, end to end: the real CLI posts to a real host, each run is a real
 * container that reaches the (fake) provider only through the host's gateway, and the reply comes back
 * out of the CLI.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { reply } from '../fakes/fake-provider.ts';
import { byGroup, chatTextsOf, createGate, turnOf, turnResponder } from '../fakes/e2e-responders.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { eventually, startE2eHost, type E2eHost } from './e2e-harness.ts';

/** Answers in words, naming the group and the newest message, without tools. */
const sayWhatYouHeard = turnResponder((t) => reply.text(`[${t.group}] heard: ${t.text}`));

await describeDocker('e2e: console turns through real containers', () => {
  let h: E2eHost;

  beforeAll(async () => {
    h = await startE2eHost({ responder: sayWhatYouHeard });
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  it('answers the admin group; a non-admin group answers only when called @Andy', async () => {
    const main = await h.send('main', 'hello from the e2e test');
    expect(main.stderr).toBe('');
    expect(main.stdout).toBe('[main] heard: hello from the e2e test\n');
    expect(main.code).toBe(0);
    expect(h.started('main')).toHaveLength(1);
    // The gateway forwarded with the real key; the container never presented it.
    expect(h.fake.requests.length).toBeGreaterThan(0);
    for (const r of h.fake.requests) expect(r.headers.authorization).toBe(`Bearer ${h.providerKey}`);

    const added = await h.cli(['groups', 'add', 'fam', '--channel', 'local']);
    expect(added.stdout).toMatch(/added group fam/);
    expect(added.code).toBe(0);

    const requestsBefore = h.fake.requests.length;
    const quiet = await h.send('fam', 'dinner at eight');
    expect(quiet.code).toBe(0);
    expect(quiet.stdout).toBe('');
    expect(quiet.stderr).toMatch(/mention @Andy/);
    expect(h.runs('fam')).toEqual([]);
    expect(h.started('fam')).toEqual([]);
    expect(h.fake.requests.length).toBe(requestsBefore);

    const asked = await h.send('fam', '@Andy what time is dinner?');
    expect(asked.stdout).toBe('[fam] heard: @Andy what time is dinner?\n');
    expect(asked.code).toBe(0);
    expect(h.started('fam')).toHaveLength(1);
    expect(h.runs('fam')).toMatchObject([{ status: 'succeeded', replied: true }]);
    // The untriggered message reached the agent as context of the triggered run.
    const famRequests = h.requestsOf('fam');
    expect(famRequests).toHaveLength(1);
    expect(chatTextsOf(famRequests[0]?.body)).toEqual(['dinner at eight', '@Andy what time is dinner?']);
  }, 120_000);

  it("a file written by one run's tool call is read back by the next message's run", async () => {
    const word = `PELICAN-${Date.now().toString(36)}`;
    h.fake.setResponder(
      turnResponder(
        (t) =>
          t.text.startsWith('remember')
            ? reply.toolCalls([
                { name: 'write_file', arguments: { path: 'notes/code-word.txt', content: word } },
              ])
            : reply.toolCalls([{ name: 'read_file', arguments: { path: 'notes/code-word.txt' } }]),
        (t) =>
          reply.text(
            t.text.startsWith('remember')
              ? `Noted (${t.toolResults[0]})`
              : `The note says: ${t.toolResults[0]}`,
          ),
      ),
    );
    const startsBefore = h.started('main').length;
    const runsBefore = h.runs('main').length;

    const first = await h.send('main', `remember the code word ${word}`);
    expect(first.stdout).toMatch(/^Noted \(Wrote \d+ bytes to notes\/code-word\.txt\.\)\n$/);
    expect(fs.readFileSync(path.join(h.paths.groupsDir, 'main', 'notes', 'code-word.txt'), 'utf8')).toBe(
      word,
    );

    const requestsBefore = h.fake.requests.length;
    const second = await h.send('main', 'what is the code word?');
    expect(second.stdout).toBe(`The note says: ${word}\n`);
    expect(second.code).toBe(0);

    // Two runs, two containers: the file and the conversation outlived the first one.
    expect(h.started('main').length - startsBefore).toBe(2);
    expect(h.runs('main').slice(runsBefore)).toMatchObject([
      { status: 'succeeded' },
      { status: 'succeeded' },
    ]);
    const asked = h.fake.requests.slice(requestsBefore).map(turnOf);
    expect(asked.map((t) => t.step)).toEqual([0, 1]);
    // The second run's first request carries the first exchange from the stored session history.
    expect(chatTextsOf(asked[0]?.request.body)).toEqual(
      expect.arrayContaining([`remember the code word ${word}`, 'what is the code word?']),
    );
    expect(JSON.stringify(asked[0]?.request.body)).toContain('Noted (Wrote');
  }, 120_000);

  it('a follow-up sent while the run waits for the model reaches the same run and container', async () => {
    const gate = createGate();
    h.fake.setResponder(
      byGroup({
        main: (request) => {
          const turn = turnOf(request);
          const answer = reply.text(`got: ${turn.text}`);
          return turn.text === 'first question' ? gate.opened.then(() => answer) : answer;
        },
      }),
    );
    const startsBefore = h.started('main').length;
    const runsBefore = h.runs('main').length;
    const from = h.fake.requests.length;

    const first = h.send('main', 'first question');
    await h.waitForRequest((r) => turnOf(r).text === 'first question', from);
    const [run] = h.runs('main').slice(runsBefore);
    expect(run?.status).toBe('running');

    const second = h.send('main', 'second question');
    // Released only once the agent acknowledged the follow-up over IPC (run.input), so the model
    // is still busy with the first question when it arrives.
    const secondId = await eventually('the second message to be stored', () => {
      try {
        return h.messageId('main', 'second question');
      } catch {
        return undefined;
      }
    });
    await eventually('the running agent to take in the follow-up', () =>
      h.runs('main').find((r) => r.id === run?.id && r.ackedThrough >= secondId),
    );
    expect(gate.isOpen).toBe(false);
    gate.open();

    const [one, two] = await Promise.all([first, second]);
    expect(one.stdout).toContain('got: first question\n');
    expect(two.stdout).toContain('got: second question\n');
    expect(one.code).toBe(0);
    expect(two.code).toBe(0);

    const runs = h.runs('main').slice(runsBefore);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: 'succeeded', replied: true });
    expect(h.started('main').length - startsBefore).toBe(1);
    const replies = h.outbox('main').filter((o) => o.runId === runs[0]?.id);
    expect(replies.map((o) => o.text)).toEqual(['got: first question', 'got: second question']);

    // The provider saw the follow-up in a later request of that run, after the first answer.
    const asked = h.fake.requests.slice(from).map(turnOf);
    expect(asked.map((t) => t.text)).toEqual(['first question', 'second question']);
    expect(chatTextsOf(asked[1]?.request.body)).toEqual(
      expect.arrayContaining(['first question', 'second question']),
    );
    expect(JSON.stringify(asked[1]?.request.body)).toContain('got: first question');
  }, 120_000);
});
