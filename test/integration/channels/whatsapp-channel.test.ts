import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createWhatsAppChannel,
  type WhatsAppChannel,
} from '../../../host/channels/whatsapp/whatsapp-channel.ts';
import { whatsappConfigSchema } from '../../../host/channels/whatsapp/whatsapp-config.ts';
import type { ReconnectPolicy } from '../../../host/channels/whatsapp/connection-controller.ts';
import { createRecordingChannelHost } from '../../fakes/recording-channel-host.ts';
import {
  FAKE_SELF_JID,
  FAKE_SELF_LID,
  seedLinkedAuth,
  startFakeWhatsApp,
  waMessage,
  type FakeWhatsApp,
} from '../../fakes/whatsapp-fake.ts';
import { waitFor } from '../../helpers/processes.ts';
import { fakeClock, type FakeClock } from '../../helpers/fake-clock.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const GROUP = '120363000000000001@g.us';
const ALICE = '15551234567@s.whatsapp.net';
const tempDir = useTempDirs('carapace-wa-');
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(opts: { policy?: Partial<ReconnectPolicy>; linked?: boolean; clock?: FakeClock } = {}) {
  const dir = tempDir();
  const server: FakeWhatsApp = await startFakeWhatsApp(dir);
  cleanups.push(() => server.close());
  const authDir = path.join(dir, 'whatsapp');
  if (opts.linked !== false) await seedLinkedAuth(authDir);
  const rec = createRecordingChannelHost();
  const channel: WhatsAppChannel = createWhatsAppChannel({
    config: whatsappConfigSchema.parse({ websocket_url: server.url }),
    dataDir: authDir,
    logger: process.env.WA_LOG
      ? pino({ level: 'trace' }, pino.destination(process.env.WA_LOG))
      : pino({ level: 'silent' }),
    policy: { initialDelayMs: 200, maxDelayMs: 1_000, ...opts.policy },
    sendWaitMs: 5_000,
    ...(opts.clock ? { clock: opts.clock.clock } : {}),
  });
  cleanups.push(() => channel.stop());
  await channel.start(rec.host);
  return { server, rec, channel };
}

const connected = (channel: WhatsAppChannel) =>
  waitFor('connected', () => channel.status().state === 'connected');

describe('WhatsApp channel on a real Baileys socket (crabline server)', () => {
  it('stores group messages from phone and LID senders, and ignores direct messages', async () => {
    const { server, rec, channel } = await setup();
    await connected(channel);
    await server.inject({ chatJid: GROUP, senderJid: ALICE, text: '@Andy hello', pushName: 'Alice' });
    await server.inject({
      chatJid: GROUP,
      senderJid: '99887766554433@lid',
      text: 'only a LID',
      pushName: 'Lin',
    });
    await server.inject({ chatJid: ALICE, senderJid: ALICE, text: 'a private chat', pushName: 'Alice' });
    // The sentinel: inbound messages are handled in order, so the private one was dropped before it.
    await server.inject({ chatJid: GROUP, senderJid: ALICE, text: 'sentinel', pushName: 'Alice' });
    await waitFor('the sentinel', () => rec.messages.some((m) => m.text === 'sentinel'));
    expect(rec.messages.map((m) => [m.chatId, m.senderId, m.senderName, m.text, m.fromOwner])).toEqual([
      [GROUP, ALICE, 'Alice', '@Andy hello', false],
      [GROUP, '99887766554433@lid', 'Lin', 'only a LID', false],
      [GROUP, ALICE, 'Alice', 'sentinel', false],
    ]);
  });

  it('takes the owner’s self-chat messages (phone and LID forms) as the owner’s, and not its own echo', async () => {
    const { server, rec, channel } = await setup();
    await connected(channel);
    const sock = channel.socket();
    if (!sock) throw new Error('no socket');
    // crabline refuses messages from the linked account itself: they go into Baileys' own event buffer.
    sock.ev.emit('messages.upsert', {
      type: 'notify',
      messages: [
        waMessage({ id: 'OWN1', remoteJid: FAKE_SELF_JID, fromMe: true, text: 'pending', pushName: 'Me' }),
        waMessage({
          id: 'OWN2',
          remoteJid: FAKE_SELF_LID,
          remoteJidAlt: FAKE_SELF_JID,
          fromMe: true,
          text: 'status',
        }),
      ],
    });
    await waitFor('two owner messages', () => rec.messages.length >= 2);
    expect(rec.messages.map((m) => [m.chatId, m.senderId, m.text, m.fromOwner])).toEqual([
      [FAKE_SELF_JID, FAKE_SELF_JID, 'pending', true],
      [FAKE_SELF_JID, FAKE_SELF_JID, 'status', true],
    ]);
    expect(channel.adminChatId()).toBe(FAKE_SELF_JID);

    const outcome = await channel.send({
      chatId: FAKE_SELF_JID,
      text: '**Nothing** pending',
      idempotencyKey: 'k1',
      sendKey: 'k1',
    });
    expect(outcome.kind).toBe('delivered');
    if (outcome.kind !== 'delivered') return;
    rec.recordSent(FAKE_SELF_JID, outcome.platformIds);
    // The server received it, formatted for WhatsApp, under the id the channel reported.
    const sent = await waitFor('sent text', () =>
      server.sentTexts().find((s) => s.id === outcome.platformIds[0]),
    );
    expect(sent.text).toBe('*Nothing* pending');
    // Baileys echoes our own send as an upsert; WhatsApp may deliver it again later: neither is input.
    sock.ev.emit('messages.upsert', {
      type: 'append',
      messages: [
        waMessage({ id: outcome.platformIds[0] ?? '', remoteJid: FAKE_SELF_LID, fromMe: true, text: 'x' }),
      ],
    });
    // The sentinel: the owner's next message, handled after the echo.
    sock.ev.emit('messages.upsert', {
      type: 'notify',
      messages: [waMessage({ id: 'OWN3', remoteJid: FAKE_SELF_JID, fromMe: true, text: 'sentinel' })],
    });
    await waitFor('the sentinel', () => rec.messages.length >= 3);
    expect(rec.messages.map((m) => m.text)).toEqual(['pending', 'status', 'sentinel']);
  });

  it('treats the owner’s account in a group as a member, and sees mentions and replies to the bot', async () => {
    const { rec, channel } = await setup();
    await connected(channel);
    const sock = channel.socket();
    if (!sock) throw new Error('no socket');
    const sent = await channel.send({ chatId: ALICE, text: 'hi', idempotencyKey: 'k-dm', sendKey: 'k-dm' });
    if (sent.kind !== 'delivered') throw new Error(`send: ${JSON.stringify(sent)}`);
    rec.recordSent(GROUP, sent.platformIds);
    sock.ev.emit('messages.upsert', {
      type: 'notify',
      messages: [
        waMessage({
          id: 'G1',
          remoteJid: GROUP,
          fromMe: true,
          participant: FAKE_SELF_JID,
          text: 'approve 1',
        }),
        waMessage({
          id: 'G2',
          remoteJid: GROUP,
          participant: '42@lid',
          participantAlt: ALICE,
          text: 'hey',
          mentionedJid: [FAKE_SELF_LID],
        }),
        waMessage({
          id: 'G3',
          remoteJid: GROUP,
          participant: ALICE,
          text: 'yes',
          quotedId: sent.platformIds[0] ?? '',
        }),
      ],
    });
    await waitFor('three messages', () => rec.messages.length >= 3);
    expect(rec.messages.map((m) => [m.senderId, m.fromOwner, m.mentionsBot, m.repliesToBot])).toEqual([
      [FAKE_SELF_JID, false, false, false],
      [ALICE, false, true, false],
      [ALICE, false, false, true],
    ]);
  });

  it('reconnects once after a server restart with one timer, and loses nothing', async () => {
    const { server, rec, channel } = await setup();
    await connected(channel);
    // crabline restarts its id counter with the server: real ids never repeat, so give them.
    await server.inject({
      chatJid: GROUP,
      senderJid: ALICE,
      text: 'before',
      pushName: 'Alice',
      messageId: 'BEFORE1',
    });
    await waitFor('first message', () => rec.messages.length === 1);
    await server.restart();
    await waitFor('reconnecting', () => channel.status().state === 'connecting');
    expect(channel.pendingReconnects()).toBeLessThanOrEqual(1);
    await connected(channel);
    expect(channel.pendingReconnects()).toBe(0);
    await server.inject({
      chatJid: GROUP,
      senderJid: ALICE,
      text: 'after',
      pushName: 'Alice',
      messageId: 'AFTER1',
    });
    await waitFor('second message', () => rec.messages.length === 2);
    expect(rec.messages.map((m) => m.text)).toEqual(['before', 'after']);
    const outcome = await channel.send({
      chatId: ALICE,
      text: 'still here',
      idempotencyKey: 'k-after',
      sendKey: 'k-after',
    });
    expect(outcome.kind).toBe('delivered');
  });

  it('holds a send made while reconnecting until the socket is back, then sends it once', async () => {
    const { server, channel } = await setup({ policy: { initialDelayMs: 1_000, jitter: 0 } });
    await connected(channel);
    await server.restart();
    await waitFor('reconnecting', () => channel.status().state === 'connecting');
    const outcome = await channel.send({
      chatId: ALICE,
      text: 'during the gap',
      idempotencyKey: 'k-gap',
      sendKey: 'k-gap',
    });
    expect(outcome.kind).toBe('delivered');
    await waitFor('sent', () => server.sentTexts().some((s) => s.text === 'during the gap'));
    expect(server.sentTexts().filter((s) => s.text === 'during the gap')).toHaveLength(1);
  });

  it.each([
    [401, 'conflict', 'device_removed', 'logged-out', /whatsapp login/],
    [440, 'conflict', 'replaced', 'stopped', /Another session/],
  ])(
    'stops for good on %i from the stream, with the fix in words, and no timer left',
    async (code, tag, type, state, fix) => {
      // The channel's timers on a clock the test moves: past every reconnect delay, nothing is armed.
      const time = fakeClock(Date.now());
      const { channel } = await setup({ clock: time });
      await connected(channel);
      const sock = channel.socket();
      if (!sock) throw new Error('no socket');
      // Through Baileys' own close path: the stream error WhatsApp sends.
      sock.ws.emit('CB:stream:error', {
        tag: 'stream:error',
        attrs: { code: String(code) },
        content: [{ tag, attrs: { type } }],
      });
      await waitFor('terminal state', () => channel.status().state === state);
      expect(channel.status().reason).toMatch(fix);
      expect(time.live()).toEqual([]);
      time.advance(60_000);
      expect(channel.status().state).toBe(state);
      expect(channel.pendingReconnects()).toBe(0);
    },
  );

  it('reconnects a socket that stays open but silent (watchdog)', async () => {
    const { rec, channel } = await setup({ policy: { silentAfterMs: 1_500 } });
    await connected(channel);
    // crabline answers pings, but Baileys pings only every 30 s: 1.5 s of silence trips the watchdog.
    await waitFor('reconnect after silence', () =>
      rec.statuses.some((s) => s.state === 'connecting' && /nothing arrived/.test(s.reason ?? '')),
    );
    await connected(channel);
  });

  it('needs a login when no device is linked, and never connects', async () => {
    const { rec, channel } = await setup({ linked: false });
    expect(channel.status().state).toBe('needs-login');
    expect(channel.status().reason).toMatch(/carapace whatsapp login/);
    expect(rec.statuses.map((s) => s.state)).toEqual(['needs-login']);
    expect(channel.pendingReconnects()).toBe(0);
    expect((await channel.send({ chatId: GROUP, text: 'x', idempotencyKey: 'k', sendKey: 'k' })).kind).toBe(
      'retry',
    );
  });
});
