import path from 'node:path';
import { startTelegramServer, type StartedTelegramServer } from '@openclaw/crabline';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createTelegramChannel } from '../../../host/channels/telegram/telegram-channel.ts';
import { telegramConfigSchema } from '../../../host/channels/telegram/telegram-config.ts';
import { createRecordingHost, openStateFile } from '../../fakes/telegram-test-host.ts';
import { waitFor } from '../../helpers/processes.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';
import { freePort } from '../../helpers/loopback-server.ts';

/** The same adapter against @openclaw/crabline's Telegram server: long polling, webhooks, forum topics. */

const OWNER = 5550001;
const SECRET = 'a-webhook-secret-of-enough-length_42';
const tempDir = useTempDirs('carapace-crab-');
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Sent {
  method: string;
  body: Record<string, unknown>;
}

async function startCrabline(dir: string) {
  const sent: Sent[] = [];
  const server: StartedTelegramServer = await startTelegramServer({
    botUsername: 'carapace_crab_bot',
    recorderPath: path.join(dir, 'telegram.jsonl'),
    onEvent: (e) => {
      const method = e.path.split('/').at(-1) ?? '';
      if (e.type === 'api') sent.push({ method, body: (e.body ?? {}) as Record<string, unknown> });
    },
  });
  cleanups.push(() => server.close());
  const inbound = async (body: Record<string, unknown>) => {
    const res = await fetch(server.manifest.endpoints.adminInboundUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-crabline-admin-token': server.manifest.adminToken },
      body: JSON.stringify(body),
    });
    expect(res.status, await res.clone().text()).toBe(200);
  };
  return { server, sent, inbound };
}

async function startChannel(
  crab: Awaited<ReturnType<typeof startCrabline>>,
  dir: string,
  extra: Record<string, unknown> = {},
) {
  const state = openStateFile(dir);
  const recording = createRecordingHost();
  const channel = createTelegramChannel({
    config: telegramConfigSchema.parse({
      owner_user_id: OWNER,
      api_root: crab.server.manifest.endpoints.apiRoot,
      poll_timeout_s: 1,
      ...extra,
    }),
    token: crab.server.manifest.botToken,
    webhookSecret: SECRET,
    triggerWord: '@Andy',
    state,
    logger: pino({ level: 'silent' }),
  });
  await channel.start(recording.host);
  const stop = async () => {
    await channel.stop();
    state.close();
  };
  cleanups.push(stop);
  await waitFor('the channel to connect', () => channel.status().state === 'connected', 10_000);
  return { channel, stop, ...recording };
}

const until = <T>(probe: () => T | undefined | false) => waitFor('the adapter', probe, 10_000);

describe('Telegram adapter against @openclaw/crabline', () => {
  it('long polling: a group mention is ingested, and a topic message is answered in its topic', async () => {
    const dir = tempDir();
    const crab = await startCrabline(dir);
    const t = await startChannel(crab, dir);
    const text = 'hey @carapace_crab_bot what is up';
    await crab.inbound({
      chatId: -1001234,
      chatType: 'supergroup',
      fromId: 42,
      fromName: 'Ann',
      text,
      entities: [{ type: 'mention', offset: 4, length: '@carapace_crab_bot'.length }],
    });
    await crab.inbound({
      chatId: -1005678,
      chatType: 'supergroup',
      isForum: true,
      messageThreadId: 9,
      fromId: 42,
      text: 'topic talk',
    });
    await until(() => t.inbound.length >= 2);
    expect(t.inbound.map((m) => [m.chatId, m.mentionsBot, m.text])).toEqual([
      ['-1001234', true, text],
      ['-1005678/9', false, 'topic talk'],
    ]);
    const outcome = await t.channel.send({
      chatId: '-1005678/9',
      text: 'in *your* topic',
      idempotencyKey: 'k',
      sendKey: 'k',
    });
    expect(outcome.kind).toBe('delivered');
    const reply = crab.sent.find((s) => s.method === 'sendMessage');
    expect(reply?.body).toMatchObject({
      chat_id: -1005678,
      message_thread_id: 9,
      text: 'in <b>your</b> topic',
      parse_mode: 'HTML',
    });
  });

  it('webhook mode: updates arrive with the secret token; switching back to polling deletes the webhook', async () => {
    const dir = tempDir();
    const crab = await startCrabline(dir);
    const port = await freePort();
    const webhook = { listen: `127.0.0.1:${port}`, public_url: `http://127.0.0.1:${port}/telegram` };
    const hooked = await startChannel(crab, dir, { mode: 'webhook', webhook });
    const info = await fetch(
      `${crab.server.manifest.endpoints.apiRoot}/bot${crab.server.manifest.botToken}/getWebhookInfo`,
    );
    expect(((await info.json()) as { result: { url: string } }).result.url).toBe(webhook.public_url);
    expect(crab.sent.find((s) => s.method === 'setWebhook')?.body).toMatchObject({
      secret_token: '<redacted>',
    });

    await crab.inbound({ chatId: -1001234, chatType: 'supergroup', fromId: 42, text: 'by webhook' });
    await until(() => hooked.inbound.find((m) => m.text === 'by webhook'));

    // A post without the secret is refused before its body is read.
    const forged = await fetch(webhook.public_url, {
      method: 'POST',
      body: JSON.stringify({ update_id: 99 }),
    });
    expect(forged.status).toBe(401);
    const huge = await fetch(webhook.public_url, {
      method: 'POST',
      headers: { 'x-telegram-bot-api-secret-token': SECRET, 'content-type': 'application/json' },
      body: 'x'.repeat(1024 * 1024 + 10),
    });
    expect(huge.status).toBe(413);
    await hooked.stop();

    const polling = await startChannel(crab, dir);
    expect(crab.sent.some((s) => s.method === 'deleteWebhook')).toBe(true);
    await crab.inbound({ chatId: -1001234, chatType: 'supergroup', fromId: 42, text: 'by polling again' });
    await until(() => polling.inbound.find((m) => m.text === 'by polling again'));
  });
});
