import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createTelegramChannel } from '../../../host/channels/telegram/telegram-channel.ts';
import { telegramConfigSchema } from '../../../host/channels/telegram/telegram-config.ts';
import { startFakeTelegram, type FakeTelegram } from '../../fakes/fake-telegram-api.ts';
import { createRecordingHost, handledThrough, openStateFile } from '../../fakes/telegram-test-host.ts';
import { fakeClock, type FakeClock } from '../../helpers/fake-clock.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';
import { freePort } from '../../helpers/loopback-server.ts';

const OWNER = 5550001;
const STRANGER = 5550002;
const GROUP = { id: -100200300, type: 'supergroup' as const, title: 'Family' };
const FORUM = { id: -100900800, type: 'supergroup' as const, title: 'Projects', is_forum: true };

const WEBHOOK_SECRET = 'a-webhook-secret-of-enough-length_42';

const tempDir = useTempDirs('carapace-tg-');
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(
  opts: {
    privacy?: boolean;
    fake?: FakeTelegram;
    dir?: string;
    config?: Record<string, unknown>;
    webhookSecret?: string;
    clock?: FakeClock;
    watchdogGraceMs?: number;
  } = {},
) {
  const fake = opts.fake ?? (await startFakeTelegram({ privacy: opts.privacy }));
  if (!opts.fake) cleanups.push(() => fake.close());
  const dir = opts.dir ?? tempDir();
  const state = openStateFile(dir);
  const recording = createRecordingHost();
  const channel = createTelegramChannel({
    config: telegramConfigSchema.parse({
      owner_user_id: OWNER,
      api_root: fake.apiRoot,
      poll_timeout_s: 1,
      ...opts.config,
    }),
    token: fake.token,
    ...(opts.webhookSecret ? { webhookSecret: opts.webhookSecret } : {}),
    triggerWord: '@Andy',
    state,
    logger: pino({ level: 'silent' }),
    watchdogGraceMs: opts.watchdogGraceMs ?? 300,
    retryBaseMs: 20,
    ...(opts.clock ? { clock: opts.clock.clock } : {}),
  });
  await channel.start(recording.host);
  const stop = async () => {
    await channel.stop();
    state.close();
  };
  cleanups.push(stop);
  await fake.waitFor(() => channel.status().state === 'connected');
  return { fake, channel, state, dir, stop, ...recording };
}

const mention = (text: string, handle: string) => [
  { type: 'mention', offset: text.indexOf(handle), length: handle.length },
];

describe('Telegram adapter against a fake Bot API (real grammY client)', () => {
  it('normalises a group message that mentions the bot, and remembers the group title', async () => {
    const t = await setup();
    const text = `hello @${t.fake.username} how are you`;
    t.fake.message({
      chat: GROUP,
      from: { id: 42, first_name: 'Ann' },
      text,
      entities: mention(text, `@${t.fake.username}`),
    });
    const m = await t.fake.waitFor(() => t.inbound[0]);
    expect(m).toMatchObject({
      channel: 'telegram',
      chatId: String(GROUP.id),
      senderId: '42',
      senderName: 'Ann',
      text,
      mentionsBot: true,
      repliesToBot: false,
      fromOwner: false,
    });
    expect(t.chats.get(String(GROUP.id))).toBe('Family');
  });

  it('treats a forum topic as its own conversation and answers in that topic', async () => {
    const t = await setup();
    t.fake.message({
      chat: FORUM,
      from: { id: 42 },
      text: 'in the topic',
      thread: 77,
      extra: {
        reply_to_message: {
          message_id: 77,
          date: 1,
          chat: FORUM,
          forum_topic_created: { name: 'Garden', icon_color: 1 },
        },
      },
    });
    const m = await t.fake.waitFor(() => t.inbound[0]);
    expect(m.chatId).toBe(`${FORUM.id}/77`);
    expect(m.repliesToBot).toBe(false);
    expect(t.chats.get(`${FORUM.id}/77`)).toBe('Projects › Garden');
    const outcome = await t.channel.send({
      chatId: m.chatId,
      text: 'answer',
      idempotencyKey: 'k1',
      sendKey: 'k1',
    });
    expect(outcome.kind).toBe('delivered');
    expect(t.fake.sent().at(-1)).toMatchObject({ chat_id: FORUM.id, message_thread_id: 77, text: 'answer' });
  });

  it('hands captions with the media they came with, replies to the bot, and ignores other bots and edits', async () => {
    const t = await setup();
    t.fake.message({ chat: GROUP, from: { id: 1, is_bot: true }, text: 'bot chatter' });
    t.fake.push({
      edited_message: {
        message_id: 1,
        date: 1,
        edit_date: 2,
        chat: GROUP,
        from: { id: 42, is_bot: false, first_name: 'A' },
        text: 'edited',
      },
    });
    t.fake.message({
      chat: GROUP,
      from: { id: 42 },
      caption: 'look',
      extra: { photo: [{ file_id: 'f', file_unique_id: 'u', width: 1, height: 1 }] },
    });
    t.fake.message({
      chat: GROUP,
      from: { id: 42 },
      extra: { document: { file_id: 'f', file_unique_id: 'u', file_name: 'report.pdf' } },
    });
    const last = t.fake.message({
      chat: GROUP,
      from: { id: 42 },
      text: 'thanks',
      extra: {
        reply_to_message: {
          message_id: 9,
          date: 1,
          chat: GROUP,
          from: { id: t.fake.botId, is_bot: true, first_name: 'B' },
          text: 'hi',
        },
      },
    });
    await handledThrough(t.state, last.updateId);
    // The host writes a file's placeholder once it knows what the file is: the adapter hands the caption.
    expect(t.inbound.map((m) => [m.text, m.media?.kind, m.media?.fileName, m.repliesToBot])).toEqual([
      ['look', 'photo', undefined, false],
      ['', 'document', 'report.pdf', false],
      ['thanks', undefined, undefined, true],
    ]);
  });

  it('refuses a stranger in private once, never hands it to the host, and tells anyone their id on /start', async () => {
    const t = await setup();
    const dm = { id: STRANGER, type: 'private' as const };
    t.fake.message({ chat: dm, from: { id: STRANGER }, text: 'approve abc123' });
    t.fake.message({ chat: dm, from: { id: STRANGER }, text: 'hello?' });
    const last = t.fake.message({ chat: dm, from: { id: STRANGER }, text: '/start' });
    await handledThrough(t.state, last.updateId);
    // The replies are courtesy sends, not awaited by the handler: the two of them.
    await t.fake.waitFor(() => t.fake.sent().length >= 2);
    expect(t.inbound).toEqual([]);
    const texts = t.fake.sent().map((s) => s.text);
    expect(texts).toHaveLength(2);
    expect(texts[0]).toMatch(/only talks to its owner/);
    expect(texts[1]).toContain(`Your Telegram user id is ${STRANGER}`);
    expect(t.channel.adminChatId()).toBe(String(OWNER));
  });

  it("attests the owner in their private chat only, which is the channel's admin chat from the start", async () => {
    const t = await setup();
    expect(t.channel.adminChatId()).toBe(String(OWNER));
    t.fake.message({ chat: { id: OWNER, type: 'private' }, from: { id: OWNER }, text: 'pending' });
    t.fake.message({ chat: GROUP, from: { id: OWNER }, text: 'pending' });
    await t.fake.waitFor(() => t.inbound.length >= 2);
    expect(t.inbound.map((m) => [m.chatId, m.fromOwner])).toEqual([
      [String(OWNER), true],
      [String(GROUP.id), false],
    ]);
    expect(t.channel.adminChatId()).toBe(String(OWNER));
  });

  it("sends approval buttons; the owner's press arrives as the owner's command, anyone else's as theirs", async () => {
    const t = await setup();
    await t.channel.send({
      chatId: String(OWNER),
      text: 'Approve web_fetch? id k3x9',
      idempotencyKey: 'a1',
      sendKey: 'a1',
      actions: [
        { label: 'Approve', command: 'approve k3x9' },
        { label: 'Deny', command: 'deny k3x9' },
      ],
    });
    const sent = t.fake.sent().at(-1);
    expect(sent?.reply_markup).toEqual({
      inline_keyboard: [
        [
          { text: 'Approve', callback_data: 'approve k3x9' },
          { text: 'Deny', callback_data: 'deny k3x9' },
        ],
      ],
    });
    const message = {
      message_id: sent?.message_id,
      date: 1,
      chat: { id: OWNER, type: 'private' },
      text: 'Approve?',
    };
    t.fake.push({
      callback_query: {
        id: 'q1',
        from: { id: STRANGER, is_bot: false, first_name: 'Eve' },
        chat_instance: 'c',
        data: 'approve k3x9',
        message,
      },
    });
    t.fake.push({
      callback_query: {
        id: 'q2',
        from: { id: OWNER, is_bot: false, first_name: 'Own' },
        chat_instance: 'c',
        data: 'approve k3x9',
        message,
      },
    });
    await t.fake.waitFor(() => t.inbound.length >= 2);
    expect(t.inbound.map((m) => [m.text, m.senderId, m.fromOwner, m.externalId])).toEqual([
      ['approve k3x9', String(STRANGER), false, 'press:q1'],
      ['approve k3x9', String(OWNER), true, 'press:q2'],
    ]);
    const answers = await t.fake.waitFor(() => {
      const a = t.fake.calls.filter((c) => c.method === 'answerCallbackQuery');
      return a.length >= 2 && a;
    });
    expect(answers.map((a) => a.params.callback_query_id)).toEqual(['q1', 'q2']);
  });

  it("answers the owner's press with what the host did (its brief), never the raw command", async () => {
    const t = await setup();
    const briefs = ['Approved', 'Already decided'];
    t.host.ingest = (m) => {
      t.inbound.push(m);
      return { stored: false, duplicate: false, triggered: false, commandBrief: briefs.shift() };
    };
    const message = { message_id: 1, date: 1, chat: { id: OWNER, type: 'private' }, text: 'Approve?' };
    const owner = { id: OWNER, is_bot: false, first_name: 'Own' };
    for (const id of ['p1', 'p2'])
      t.fake.push({ callback_query: { id, from: owner, chat_instance: 'c', data: 'approve k3x9', message } });
    const answers = await t.fake.waitFor(() => {
      const a = t.fake.calls.filter((c) => c.method === 'answerCallbackQuery');
      return a.length >= 2 && a;
    });
    expect(answers.map((a) => [a.params.callback_query_id, a.params.text])).toEqual([
      ['p1', 'Approved'],
      ['p2', 'Already decided'],
    ]);
  });

  it('falls back to plain text when Telegram cannot parse the entities', async () => {
    const t = await setup();
    t.fake.failNext('sendMessage', {
      error_code: 400,
      description: "Bad Request: can't parse entities: can't find end of the entity",
    });
    const outcome = await t.channel.send({
      chatId: String(GROUP.id),
      text: 'a *b and <c>',
      idempotencyKey: 'k',
      sendKey: 'k',
    });
    expect(outcome.kind).toBe('delivered');
    expect(t.fake.sent().at(-1)).toEqual(expect.objectContaining({ text: 'a *b and <c>' }));
    expect(t.fake.sent().at(-1)?.parse_mode).toBeUndefined();
  });

  it('escapes model text for HTML and returns the sent message id', async () => {
    const t = await setup();
    const outcome = await t.channel.send({
      chatId: String(GROUP.id),
      text: '**x** < y & `a<b>`',
      idempotencyKey: 'k',
      sendKey: 'k',
    });
    expect(outcome).toEqual({ kind: 'delivered', platformIds: [String(t.fake.sent().at(-1)?.message_id)] });
    expect(t.fake.sent().at(-1)).toMatchObject({
      parse_mode: 'HTML',
      text: '<b>x</b> &lt; y &amp; <code>a&lt;b&gt;</code>',
    });
  });

  it('waits out a short 429 in place, and hands a long one back to the outbox with its delay', async () => {
    const t = await setup({ config: { max_retry_after_s: 2 } });
    t.fake.failNext('sendMessage', {
      error_code: 429,
      description: 'Too Many Requests: retry after 1',
      parameters: { retry_after: 1 },
    });
    const started = Date.now();
    expect(
      (await t.channel.send({ chatId: String(GROUP.id), text: 'one', idempotencyKey: 'k1', sendKey: 'k1' }))
        .kind,
    ).toBe('delivered');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    t.fake.failNext('sendMessage', {
      error_code: 429,
      description: 'Too Many Requests: retry after 60',
      parameters: { retry_after: 60 },
    });
    expect(
      await t.channel.send({ chatId: String(GROUP.id), text: 'two', idempotencyKey: 'k2', sendKey: 'k2' }),
    ).toEqual({
      kind: 'retry',
      reason: expect.stringContaining('429'),
      retryAfterMs: 60_000,
    });
  });

  it('reports a migrated group as moved, from the error and from the migration message', async () => {
    const t = await setup();
    const old = -4001;
    t.fake.migrate(old, -1004001);
    await t.fake.waitFor(() => t.fake.offsets().some((o) => o >= 2));
    // Told to the host at once, so the group follows before any send finds out.
    expect(t.moves).toEqual([{ from: String(old), to: '-1004001' }]);
    expect(
      await t.channel.send({ chatId: String(old), text: 'hi', idempotencyKey: 'k', sendKey: 'k' }),
    ).toMatchObject({
      kind: 'moved',
      newChatId: '-1004001',
    });
    const t2 = await setup();
    t2.fake.migrate(-4002, -1004002);
    // Before the migration message is read, the send error itself says where the group went.
    expect(
      await t2.channel.send({ chatId: '-4002', text: 'hi', idempotencyKey: 'k', sendKey: 'k' }),
    ).toMatchObject({
      kind: 'moved',
      newChatId: '-1004002',
    });
  });

  it('maps a blocked bot or a removed one to a permanent failure', async () => {
    const t = await setup();
    t.fake.failNext('sendMessage', {
      error_code: 403,
      description: 'Forbidden: bot was kicked from the supergroup chat',
    });
    expect(
      await t.channel.send({ chatId: String(GROUP.id), text: 'x', idempotencyKey: 'k', sendKey: 'k' }),
    ).toMatchObject({
      kind: 'permanent',
    });
  });

  it('keeps the update offset in SQLite: a restart neither loses nor replays updates', async () => {
    const first = await setup();
    first.fake.message({ chat: GROUP, from: { id: 42 }, text: 'one' });
    await first.fake.waitFor(() => first.inbound.length === 1);
    await first.stop();
    first.fake.message({ chat: GROUP, from: { id: 42 }, text: 'two (sent while the host was down)' });
    const second = await setup({ fake: first.fake, dir: first.dir });
    await second.fake.waitFor(() => second.inbound.length === 1);
    const three = second.fake.message({ chat: GROUP, from: { id: 42 }, text: 'three' });
    await handledThrough(second.state, three.updateId);
    expect(second.inbound.map((m) => m.text)).toEqual(['two (sent while the host was down)', 'three']);
  });

  it('backs off on 409 with its cause in the status, and never runs two pollers', async () => {
    const t = await setup();
    t.fake.failNext(
      'getUpdates',
      { error_code: 409, description: 'Conflict: terminated by other getUpdates request' },
      2,
    );
    // Wake the current long poll so the next getUpdates meets the conflict.
    t.fake.message({ chat: GROUP, from: { id: 42 }, text: 'wake' });
    await t.fake.waitFor(() => t.statuses.some((s) => /another program is polling/.test(s.reason ?? '')));
    t.fake.message({ chat: GROUP, from: { id: 42 }, text: 'after the conflict' });
    await t.fake.waitFor(() => t.inbound.some((m) => m.text === 'after the conflict'));
    expect(t.channel.status().state).toBe('connected');
    await t.channel.start(t.host);
    expect(t.fake.maxConcurrentPolls()).toBe(1);
  });

  it('restarts a stalled long poll (watchdog)', async () => {
    // The poll's watchdog on a clock the test moves: it trips when the test says, not after a wait.
    const time = fakeClock(Date.now());
    const t = await setup({ clock: time });
    const polls = () => t.fake.calls.filter((c) => c.method === 'getUpdates').length;
    const before = polls();
    t.fake.stallNextPoll();
    // The current poll ends at its 1 s timeout; the next one stalls until the watchdog aborts it.
    await t.fake.waitFor(() => polls() > before);
    expect(t.statuses.some((s) => /stalled/.test(s.reason ?? ''))).toBe(false);
    time.advance(1_000 + 300);
    t.fake.message({ chat: GROUP, from: { id: 42 }, text: 'after the stall' });
    await t.fake.waitFor(() => t.inbound.some((m) => m.text === 'after the stall'), 8_000);
    expect(t.statuses.some((s) => /stalled/.test(s.reason ?? ''))).toBe(true);
  });

  it('reports privacy mode with the BotFather fix in its status, for the host to tell the owner', async () => {
    const fake = await startFakeTelegram({ privacy: true });
    cleanups.push(() => fake.close());
    const t = await setup({ fake });
    const warning = t.channel.status().reason ?? '';
    expect(warning).toMatch(/privacy mode is on/);
    expect(warning).toContain('/setprivacy');
    expect(warning).toContain('Disable');
    expect(warning).toMatch(/remove the bot from each group and add it again/);
    // The adapter only translates: telling the admin chats (once) is the host's (telegram-owner-chat.test.ts).
    expect(t.fake.sent().filter((s) => /privacy mode/.test(s.text))).toEqual([]);
  });

  it('stops reporting privacy mode once the owner turned it off and re-added the bot, without a restart (webhook mode: no poll refreshes the status)', async () => {
    const fake = await startFakeTelegram({ privacy: true });
    cleanups.push(() => fake.close());
    const port = await freePort();
    const webhook = { listen: `127.0.0.1:${port}`, public_url: `http://127.0.0.1:${port}/telegram` };
    const t = await setup({ fake, config: { mode: 'webhook', webhook }, webhookSecret: WEBHOOK_SECRET });
    expect(t.channel.status().reason).toMatch(/privacy mode is on/);
    // The BotFather fix: privacy off, then the bot removed from the group and added again.
    fake.setPrivacy(false);
    const bot = { id: fake.botId, is_bot: true, first_name: 'Andy', username: fake.username };
    const readded = await fetch(webhook.public_url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': WEBHOOK_SECRET },
      body: JSON.stringify({
        update_id: 1,
        my_chat_member: {
          chat: GROUP,
          from: { id: OWNER, is_bot: false, first_name: 'Owner' },
          date: Math.floor(Date.now() / 1000),
          old_chat_member: { user: bot, status: 'left' },
          new_chat_member: { user: bot, status: 'member' },
        },
      }),
    });
    expect(readded.status).toBe(200);
    await fake.waitFor(() => t.channel.status().reason === undefined);
    expect(t.channel.status().state).toBe('connected');
    expect(t.statuses.at(-1)?.reason).toBeUndefined();
  });

  it('re-reads privacy mode when receiving recovers from an outage', async () => {
    const fake = await startFakeTelegram({ privacy: true });
    cleanups.push(() => fake.close());
    const t = await setup({ fake });
    expect(t.channel.status().reason).toMatch(/privacy mode is on/);
    fake.setPrivacy(false);
    fake.down();
    await fake.waitFor(() => t.channel.status().state === 'connecting');
    fake.up();
    await fake.waitFor(() => t.channel.status().state === 'connected' && !t.channel.status().reason, 8_000);
  });

  it('reports needs-login with the fix when the token is missing or rejected', async () => {
    const fake = await startFakeTelegram();
    cleanups.push(() => fake.close());
    for (const [token, fix] of [
      ['', /TELEGRAM_BOT_TOKEN is not set/],
      ['999:wrong', /rejected the bot token.*@BotFather/],
    ] as const) {
      const state = openStateFile(tempDir());
      const channel = createTelegramChannel({
        config: telegramConfigSchema.parse({ owner_user_id: OWNER, api_root: fake.apiRoot }),
        token,
        triggerWord: '@Andy',
        state,
        logger: pino({ level: 'silent' }),
        retryBaseMs: 20,
      });
      const { host } = createRecordingHost();
      await channel.start(host);
      expect(channel.status()).toMatchObject({ state: 'needs-login', reason: expect.stringMatching(fix) });
      await channel.stop();
      state.close();
    }
  });

  it('shows typing in a topic once per call, declares how soon it must be renewed, and reacts to a message', async () => {
    const t = await setup({});
    const actions = () => t.fake.calls.filter((c) => c.method === 'sendChatAction');
    await t.channel.setTyping(`${FORUM.id}/77`, true);
    // Off is a no-op on Telegram: "typing…" lapses by itself; the host renews it while a run is active.
    await t.channel.setTyping(`${FORUM.id}/77`, false);
    expect(actions().map((c) => c.params)).toEqual([
      expect.objectContaining({ action: 'typing', message_thread_id: 77 }),
    ]);
    // Telegram shows "typing…" for 5 s.
    expect(t.channel.typingRenewMs).toBeLessThan(5_000);
    await t.channel.acknowledge?.({
      chatId: `${FORUM.id}/77`,
      externalId: '31',
      senderId: '42',
      fromOwner: false,
    });
    expect(t.fake.calls.filter((c) => c.method === 'setMessageReaction').map((c) => c.params)).toEqual([
      expect.objectContaining({
        chat_id: FORUM.id,
        message_id: 31,
        reaction: [{ type: 'emoji', emoji: '👀' }],
      }),
    ]);
  });
});
