/**
 * The draft stream and its gate: at most one platform call per interval whatever the writer's pace, only
 * the newest draft shown, every draft through the outbound checks before it is shown, the last edit the
 * approved text, and the draft message taken back when the reply is refused or a draft fails the checks.
 * The channel is an in-memory platform that keeps what each message shows; the scanner is the real one.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Channel, OutboundPiece } from '../../../host/channels/channel.ts';
import { createDraftStream, type DraftStream } from '../../../host/router/draft-stream.ts';
import { createDraftGate } from '../../../host/security/policies/draft-gate.ts';
import { createSecretScanner } from '../../../host/security/secrets/index.ts';
import type { Taint } from '../../../host/security/taint/taint.ts';
import { createRandom, tokenMakers } from '../../fixtures/secret-corpus/generate.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';

/** A GitHub token of the real shape (its checksum right), made up for the test. */
const TOKEN = tokenMakers(createRandom(41)).githubClassic();

/** A chat that remembers every text each message ever showed, and which messages are still there. */
function platform(textLimit = 4096) {
  const messages = new Map<string, string[]>();
  const gone = new Set<string>();
  let calls = 0;
  let next = 1;
  const channel: Pick<Channel, 'send' | 'editText' | 'unsend' | 'textLimit'> = {
    textLimit,
    send(piece: OutboundPiece) {
      calls++;
      const id = String(next++);
      messages.set(id, [piece.text]);
      return Promise.resolve({ kind: 'delivered' as const, platformIds: [id] });
    },
    editText({ platformId, text }) {
      calls++;
      messages.get(platformId)?.push(text);
      return Promise.resolve(messages.has(platformId) && !gone.has(platformId));
    },
    unsend({ platformId }) {
      calls++;
      gone.add(platformId);
      return Promise.resolve(true);
    },
  };
  return {
    channel,
    calls: () => calls,
    /** Every text any message of the chat ever showed. */
    everShown: () => [...messages.values()].flat(),
    /** What the chat shows now. */
    visible: () => [...messages.entries()].filter(([id]) => !gone.has(id)).map(([, t]) => t.at(-1)),
  };
}

function setup(opts: { taint?: Taint; textLimit?: number } = {}) {
  const time = fakeClock(1_000_000);
  const chat = platform(opts.textLimit);
  const scanner = createSecretScanner({ heldSecrets: [] });
  let taint: Taint = opts.taint ?? { corruption: false, secret: false };
  const stream = createDraftStream({
    channel: chat.channel,
    chatId: '-100',
    key: 'run-1',
    gate: createDraftGate({ scanSecrets: (t) => scanner.scan(t), taint: () => taint }),
    clock: time.clock,
    logger: pino({ level: 'silent' }),
  });
  return { time, chat, stream, taintWith: (t: Taint) => (taint = t) };
}

/** Lets the stream's awaited platform calls and gate checks settle. */
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

async function write(stream: DraftStream, time: ReturnType<typeof fakeClock>, drafts: string[], everyMs: number) {
  for (const d of drafts) {
    stream.update(d);
    await settle();
    time.advance(everyMs);
    await settle();
  }
}

describe('draft stream', () => {
  it('makes at most one platform call per second however fast drafts come, and ends on the approved text', async () => {
    const { time, chat, stream } = setup();
    const drafts = Array.from({ length: 50 }, (_, i) => `word `.repeat(i + 1).trim());
    await write(stream, time, drafts, 100); // 50 drafts in 5 s
    expect(chat.calls()).toBeLessThanOrEqual(6);
    expect(chat.calls()).toBeGreaterThanOrEqual(4);
    const ending = stream.finish({ kind: 'approved', text: 'The approved answer.' });
    await settle();
    time.advance(1000);
    expect(await ending).toEqual({ kind: 'edited', platformId: '1' });
    expect(chat.visible()).toEqual(['The approved answer.']);
  });

  it('never shows a draft with a secret-shaped string, and takes back what it had shown', async () => {
    const { time, chat, stream } = setup();
    await write(stream, time, ['Here is the token you asked for'], 1000);
    expect(chat.visible()).toEqual(['Here is the token you asked for']);
    await write(stream, time, [`Here is the token you asked for: ${TOKEN}`, `${TOKEN} and more`], 1000);
    expect(chat.everShown().some((t) => t.includes('ghp_'))).toBe(false);
    expect(chat.visible()).toEqual([]);
    // The reply then went to the owner and was refused: nothing comes back.
    expect(await stream.finish({ kind: 'refused' })).toEqual({ kind: 'not-shown' });
    expect(chat.visible()).toEqual([]);
  });

  it('takes the draft back when the reply is refused', async () => {
    const { time, chat, stream } = setup();
    await write(stream, time, ['a harmless start'], 1000);
    expect(chat.visible()).toEqual(['a harmless start']);
    expect(await stream.finish({ kind: 'refused' })).toEqual({ kind: 'not-shown' });
    expect(chat.visible()).toEqual([]);
  });

  it('shows nothing for a run whose reply would be reviewed, and stops once the run is tainted', async () => {
    const tainted = setup({ taint: { corruption: true, secret: false } });
    await write(tainted.stream, tainted.time, ['one', 'one two'], 1000);
    expect(tainted.chat.everShown()).toEqual([]);

    const { time, chat, stream, taintWith } = setup();
    await write(stream, time, ['one'], 1000);
    taintWith({ corruption: false, secret: true });
    await write(stream, time, ['one two', 'one two three'], 1000);
    expect(chat.everShown()).toEqual(['one']);
    expect(chat.visible()).toEqual([]);
  });

  it('hands a reply longer than one message back to the outbox, taking the draft back', async () => {
    const { time, chat, stream } = setup({ textLimit: 20 });
    await write(stream, time, ['short'], 1000);
    await write(stream, time, ['this draft is far too long for it'], 1000);
    expect(chat.visible()).toEqual([]);
    expect(await stream.finish({ kind: 'approved', text: 'x'.repeat(30) })).toEqual({ kind: 'not-shown' });
  });
});

describe('draft gate', () => {
  const scanner = createSecretScanner({ heldSecrets: ['hunter2-held-value'] });
  const clean = { corruption: false, secret: false };
  it('passes clean text of an untainted run only', async () => {
    const gate = (taint: Taint) => createDraftGate({ scanSecrets: (t) => scanner.scan(t), taint: () => taint });
    expect(await gate(clean)('a plain answer')).toBe(true);
    expect(await gate(clean)(`token ${TOKEN}`)).toBe(false);
    expect(await gate(clean)('the password is hunter2-held-value')).toBe(false);
    expect(await gate({ corruption: true, secret: false })('a plain answer')).toBe(false);
    expect(await gate({ corruption: false, secret: true })('a plain answer')).toBe(false);
  });
  it('fails closed when a check throws', async () => {
    const gate = createDraftGate({
      scanSecrets: () => Promise.reject(new Error('scanner down')),
      taint: () => clean,
    });
    expect(await gate('a plain answer')).toBe(false);
  });
});
