/**
 * Streamed answers end to end: the real grammY client in the host against the fake Bot API, a real agent
 * container, the fake provider answering in OpenAI's SSE chunks through the host's gateway. In the owner's
 * admin chat (an untainted run) a long answer arrives as one sent message and then edits of it, and its last
 * text is the reply the policy approved, stored as delivered by that message (nothing sent twice). An answer
 * the policy holds (a secret's shape from its first words) is never shown in part: the owner is asked, and
 * no draft of it was sent or edited in. A group's run (strangers' words: tainted from the start) does not
 * stream at all: its answer arrives whole.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { FakeTelegram } from '../fakes/fake-telegram-api.ts';
import { lastUserText, reply } from '../fakes/fake-provider-script.ts';
import { createRandom, tokenMakers } from '../fixtures/secret-corpus/generate.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { eventually, type E2eHost } from './e2e-harness.ts';
import { startTelegramE2eHost } from './telegram-e2e-host.ts';

const OWNER = 8101;
const OWNER_CHAT = { id: OWNER, type: 'private' as const };
const MEMBER = { id: 8102, first_name: 'Ola' };
const NEWS = { id: -1008101, type: 'supergroup' as const, title: 'News' };

/** About 2,400 characters, in 300 words: long enough to stream for a few seconds at the fake's pace. */
const LONG_ANSWER = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');
const GROUP_ANSWER = Array.from({ length: 300 }, (_, i) => `line${i}`).join(' ');
const TOKEN = tokenMakers(createRandom(41)).githubClassic();
const HELD_ANSWER = `Here is the deploy token you asked for: ${TOKEN}. ${LONG_ANSWER}`;

await describeDocker('e2e telegram: long answers stream into one message, held ones never show', () => {
  let tg: FakeTelegram;
  let h: E2eHost;
  const textsSince = (from: number, chatId: number) =>
    tg.calls
      .slice(from)
      .filter((c) => Number(c.params.chat_id) === chatId && typeof c.params.text === 'string')
      .map((c) => ({ method: c.method, text: String(c.params.text) }));
  const streamedRequests = (asked: string) =>
    h.fake.requests.filter(
      (r) => (r.body as { stream?: boolean }).stream === true && lastUserText(r.body).includes(asked),
    ).length;

  beforeAll(async () => {
    ({ tg, h } = await startTelegramE2eHost({
      owner: OWNER,
      groups: { news: String(NEWS.id) },
      config: { runs: { max_attempts: 1 } },
      responder: (request) => {
        const asked = lastUserText(request.body);
        const text = asked.includes('deploy token')
          ? HELD_ANSWER
          : asked.includes('essay')
            ? LONG_ANSWER
            : asked.includes('lines')
              ? GROUP_ANSWER
              : 'ok';
        // A word every 15 ms: the answer takes about 4.5 s to write.
        return reply.text(text, { chunkDelayMs: 15 });
      },
    }));
  }, 240_000);
  afterAll(async () => {
    await h?.stop();
    await tg?.close();
  }, 60_000);

  it('sends a long answer once, edits it as it is written, and ends on the approved reply', async () => {
    const from = tg.calls.length;
    tg.message({ chat: OWNER_CHAT, from: { id: OWNER }, text: 'write me an essay' });
    const row = await eventually(
      'the reply stored as sent',
      () =>
        h.host.store.db
          .prepare("SELECT id, run_id AS runId FROM outbox WHERE text = ? AND status = 'sent'")
          .get(LONG_ANSWER) as { id: number; runId: number } | undefined,
      120_000,
    );
    const shown = textsSince(from, OWNER);
    const sends = shown.filter((c) => c.method === 'sendMessage');
    const edits = shown.filter((c) => c.method === 'editMessageText');
    // One message, grown by edits: every draft a beginning of the answer, the last edit the answer itself.
    expect(sends).toHaveLength(1);
    expect(edits.length).toBeGreaterThanOrEqual(2);
    for (const c of shown) expect(LONG_ANSWER.startsWith(c.text)).toBe(true);
    expect(sends[0]!.text.length).toBeLessThan(LONG_ANSWER.length);
    expect(edits.at(-1)!.text).toBe(LONG_ANSWER);
    expect(tg.deleted()).toEqual([]);
    // The outbox holds the reply as delivered by that message: nothing left to send, now or after a restart.
    const message = tg.sent().find((s) => s.chat_id === OWNER && s.text === LONG_ANSWER);
    const ids = h.host.store.db
      .prepare('SELECT platform_id AS id FROM outbox_platform_ids WHERE outbox_id = ?')
      .all(row.id) as { id: string }[];
    expect(ids).toEqual([{ id: String(message?.message_id) }]);
    const pending = h.host.store.db
      .prepare("SELECT COUNT(*) AS n FROM outbox WHERE run_id = ? AND status != 'sent'")
      .get(row.runId) as { n: number };
    expect(pending.n).toBe(0);
  }, 150_000);

  it('never shows any part of an answer the policy holds', async () => {
    const from = tg.calls.length;
    tg.message({ chat: OWNER_CHAT, from: { id: OWNER }, text: 'what is the deploy token?' });
    // The policy held the answer: the owner is asked about it (the question quotes it, as every approval does).
    await eventually(
      'the owner asked',
      () => textsSince(from, OWNER).some((c) => c.text.includes(TOKEN) && !HELD_ANSWER.startsWith(c.text)),
      120_000,
    );
    // The agent did stream it: the gate, not a silent agent, kept it off the chat.
    expect(streamedRequests('deploy token')).toBeGreaterThan(0);
    const drafts = textsSince(from, OWNER).filter(
      (c) => c.method === 'editMessageText' || HELD_ANSWER.startsWith(c.text.slice(0, 30)),
    );
    expect(drafts).toEqual([]);
  }, 150_000);

  it("does not stream a group's answer: its run read strangers' words, and the answer arrives whole", async () => {
    const from = tg.calls.length;
    tg.message({ chat: NEWS, from: MEMBER, text: '@Andy list the lines' });
    await eventually('the answer', () => tg.sent().some((s) => s.chat_id === NEWS.id), 120_000);
    expect(textsSince(from, NEWS.id)).toEqual([{ method: 'sendMessage', text: GROUP_ANSWER }]);
    expect(streamedRequests('list the lines')).toBe(0);
  }, 150_000);
});
