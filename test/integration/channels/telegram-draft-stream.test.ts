/**
 * A long answer streamed into one Telegram message: the real grammY adapter against the fake Bot API (a
 * real HTTP server), driven by the host's draft stream and gate with the real secret scanner. The chat sees
 * the message grow by edits, at most one per interval, and its last text is exactly the approved reply; a
 * draft carrying a secret-shaped string is never sent or edited in, and a refused reply leaves nothing.
 */
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { createTelegramChannel } from '../../../host/channels/telegram/telegram-channel.ts';
import { telegramConfigSchema } from '../../../host/channels/telegram/telegram-config.ts';
import { createDraftStream } from '../../../host/router/draft-stream.ts';
import { createDraftGate } from '../../../host/security/policies/draft-gate.ts';
import { createSecretScanner } from '../../../host/security/secrets/index.ts';
import { systemClock } from '../../../host/time/clock.ts';
import { startFakeTelegram, type FakeTelegram } from '../../fakes/fake-telegram-api.ts';
import { createRandom, tokenMakers } from '../../fixtures/secret-corpus/generate.ts';
import { eventually } from '../../e2e/e2e-harness.ts';

const OWNER = 5150;
const GROUP_CHAT = -1001001;
const INTERVAL_MS = 200;
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup() {
  const fake = await startFakeTelegram();
  cleanups.push(() => fake.close());
  const channel = createTelegramChannel({
    config: telegramConfigSchema.parse({ owner_user_id: OWNER, api_root: fake.apiRoot, poll_timeout_s: 1 }),
    token: fake.token,
    triggerWord: '@Andy',
    state: inMemoryState(),
    logger: pino({ level: 'silent' }),
    retryBaseMs: 20,
  });
  const scanner = createSecretScanner({ heldSecrets: [] });
  const stream = createDraftStream({
    channel,
    chatId: String(GROUP_CHAT),
    key: 'run-7',
    gate: createDraftGate({
      scanSecrets: (t) => scanner.scan(t),
      taint: () => ({ corruption: false, secret: false }),
    }),
    clock: systemClock,
    logger: pino({ level: 'silent' }),
    intervalMs: INTERVAL_MS,
  });
  return { fake, channel, stream };
}

/** Every text the bot ever put in the group: first sends and every edit. */
const everShown = (fake: FakeTelegram) => [
  ...fake.sent().filter((m) => m.chat_id === GROUP_CHAT).map((m) => m.text),
  ...fake.edits().filter((e) => e.chat_id === GROUP_CHAT).map((e) => e.text),
];

/** The adapter's durable key/value state, kept in memory: nothing here outlives the test. */
function inMemoryState() {
  const values = new Map<string, string>();
  return { get: (k: string) => values.get(k), set: (k: string, v: string) => void values.set(k, v) };
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('streams a long answer as edits of one message, ending on exactly the approved text', async () => {
  const { fake, stream } = await setup();
  const words = 'The tide tables for the week show two high waters a day'.split(' ');
  for (let i = 1; i <= words.length; i++) {
    stream.update(words.slice(0, i).join(' '));
    await pause(INTERVAL_MS / 2);
  }
  await eventually('edits arriving', () => fake.edits().length >= 2);
  const approved = 'The tide tables for the week show two high waters a day, near 06:10 and 18:30.';
  const ending = await stream.finish({ kind: 'approved', text: approved });

  const sent = fake.sent().filter((m) => m.chat_id === GROUP_CHAT);
  expect(sent).toHaveLength(1);
  expect(ending).toEqual({ kind: 'edited', platformId: String(sent[0]?.message_id) });
  expect(sent[0]?.text).toBe(approved);
  expect(fake.edits().at(-1)?.text).toBe(approved);
  expect(fake.edits().every((e) => e.message_id === sent[0]?.message_id)).toBe(true);
  expect(fake.deleted()).toEqual([]);
  // The throttle: about one call per interval over the writing, not one per draft.
  const calls = fake.calls.filter((c) => c.method === 'sendMessage' || c.method === 'editMessageText');
  expect(calls.length).toBeLessThan(words.length);
});

it('never shows a draft with a secret-shaped string, and a refused reply leaves no message', async () => {
  const { fake, stream } = await setup();
  const token = tokenMakers(createRandom(7)).githubClassic();
  stream.update('Sure, the deploy token is');
  await eventually('the first draft shown', () => fake.sent().length === 1);
  stream.update(`Sure, the deploy token is ${token}`);
  stream.update(`Sure, the deploy token is ${token} — keep it safe`);
  await eventually('the draft taken back', () => fake.deleted().length === 1);
  expect(await stream.finish({ kind: 'refused' })).toEqual({ kind: 'not-shown' });
  expect(everShown(fake).some((t) => t.includes(token) || t.includes('ghp_'))).toBe(false);
  expect(fake.calls.some((c) => JSON.stringify(c).includes(token))).toBe(false);
  expect(fake.deleted()).toEqual([{ chat_id: GROUP_CHAT, message_id: fake.sent()[0]?.message_id }]);
});
