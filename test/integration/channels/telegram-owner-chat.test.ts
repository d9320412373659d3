/**
 * The Telegram owner's private chat is an admin chat from the start once `owner_user_id` is set: the real
 * host wiring (startHost) with the real grammY channel against the fake Bot API, and an in-process runner
 * that asks for approval. The owner never writes to the bot first.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import type { ApprovalService } from '../../../host/admin/approval-service.ts';
import { startHost, type RunningHost } from '../../../host/app/host.ts';
import { newClientMessageId } from '../../../host/channels/local/local-api.ts';
import { createLocalClient } from '../../../host/channels/local/local-client.ts';
import { resolvePaths, type CarapacePaths } from '../../../host/config/paths.ts';
import { hostConfigSchema } from '../../../host/config/schema.ts';
import type { AgentRunner } from '../../../host/router/agent-runner.ts';
import { eventually } from '../../e2e/e2e-harness.ts';
import { startFakeTelegram, type FakeTelegram } from '../../fakes/fake-telegram-api.ts';
import { RISKY_PARAMS } from '../../helpers/ask-risky-command.ts';
import { sendAndWait } from '../../../host/channels/local/send-and-wait.ts';

const OWNER = 5150;
let dir: string;
let paths: CarapacePaths;
let host: RunningHost | undefined;
let tg: FakeTelegram | undefined;

afterEach(async () => {
  await host?.stop('test over');
  await tg?.close();
  host = undefined;
  tg = undefined;
  endRuns.length = 0;
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Ends the waiting run of each request so far (its request expires as `run-ended`). */
const endRuns: (() => void)[] = [];

/** A runner whose every run asks the owner once and replies with the outcome. */
function askingRunner(approvals: () => ApprovalService): AgentRunner {
  return {
    start(ctx, callbacks) {
      const ended = new AbortController();
      endRuns.push(() => ended.abort());
      const done = (async () => {
        const r = await approvals().request({
          runId: ctx.runId,
          groupId: ctx.group.id,
          operation: 'bash',
          reason: 'the agent wants to run a risky command',
          params: RISKY_PARAMS,
          signal: ended.signal,
        });
        await callbacks.reply(`outcome: ${r.outcome}`);
        return { ok: true as const, reason: 'completed' as const };
      })();
      return { accepted: Promise.resolve(), input: async () => false, stop: () => undefined, done };
    },
  };
}

async function start(
  opts: { privacy?: boolean; again?: boolean } = {},
): Promise<{ tg: FakeTelegram; host: RunningHost }> {
  if (!opts.again) {
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-tg-owner-')));
    paths = resolvePaths({
      env: { CARAPACE_CONFIG_DIR: path.join(dir, 'config'), CARAPACE_DATA_DIR: path.join(dir, 'data') },
      cwd: dir,
    });
    tg = await startFakeTelegram({ privacy: opts.privacy ?? false });
  }
  const fake = tg as FakeTelegram;
  let approvals: ApprovalService | undefined;
  host = await startHost({
    paths,
    config: hostConfigSchema.parse({
      outbox: { retry_base_ms: 10, retry_max_ms: 100 },
      channels: { telegram: { owner_user_id: OWNER, api_root: fake.apiRoot, poll_timeout_s: 1 } },
    }),
    logger: pino({ level: process.env.DEBUG_LOG ? 'debug' : 'silent' }),
    redact: (s) => s,
    secret: (name) => (name === 'TELEGRAM_BOT_TOKEN' ? fake.token : undefined),
    createRunner: async (deps) => {
      approvals = deps.approvals;
      return { runner: askingRunner(() => approvals as ApprovalService), close: async () => undefined };
    },
  });
  return { tg: fake, host };
}

const ownerMessages = (fake: FakeTelegram) => fake.sent().filter((s) => s.chat_id === OWNER);

/** A group's run asks for approval; resolves with the request as the owner's Telegram chat shows it. */
async function askOwner(fake: FakeTelegram, running: RunningHost) {
  running.store.groups.add({
    id: 'family',
    channel: 'local',
    chatId: 'family',
    name: 'Family',
    isAdmin: false,
  });
  await createLocalClient(paths.socketFile).postMessage({
    group: 'family',
    text: '@Andy do the risky thing',
    clientMessageId: newClientMessageId(),
  });
  const request = await eventually('the request in the owner chat', () =>
    ownerMessages(fake).find((s) => s.reply_markup !== undefined),
  );
  const id = running.store.approvals.listPending()[0]?.id ?? '';
  expect(request.text).toContain(id);
  return { id, messageId: request.message_id };
}

const buttonsRemoved = (fake: FakeTelegram, messageId: number) =>
  eventually('the buttons removed', () =>
    fake.calls.some((c) => c.method === 'editMessageReplyMarkup' && c.params.message_id === messageId),
  );

/**
 * The edits that took buttons off the request's message, counted once the host stopped: a stop waits for
 * the retractions under way and ends the channel, so no later call can come (the sentinel, not a sleep).
 */
async function buttonEditsAfterStop(fake: FakeTelegram, running: RunningHost, messageId: number) {
  await running.stop('test over');
  host = undefined;
  return fake.calls.filter(
    (c) =>
      c.method === 'editMessageReplyMarkup' &&
      c.params.chat_id === OWNER &&
      c.params.message_id === messageId,
  );
}

it("sends an approval request to the owner's private chat with no message from the owner before, and removes its buttons once pressed", async () => {
  const { tg, host } = await start();
  const request = await askOwner(tg, host);
  expect(tg.calls.some((c) => c.method === 'getUpdates')).toBe(true);
  const { id } = request;

  tg.push({
    callback_query: {
      id: 'press-1',
      from: { id: OWNER, is_bot: false, first_name: 'Owner' },
      chat_instance: 'c',
      data: `approve ${id}`,
      message: {
        message_id: request.messageId,
        date: 1,
        chat: { id: OWNER, type: 'private' },
        text: 'the request',
      },
    },
  });
  await eventually('the request approved', () => host.store.approvals.get(id)?.status !== 'pending');
  const edit = await eventually('the buttons removed', () =>
    tg.calls.find((c) => c.method === 'editMessageReplyMarkup'),
  );
  expect(edit.params).toMatchObject({ chat_id: OWNER, message_id: request.messageId });
  expect(edit.params.reply_markup).toBeUndefined();
  // The press took them off, and the host's own retraction for the decision found it done.
  expect(await buttonEditsAfterStop(tg, host, request.messageId)).toHaveLength(1);
}, 30_000);

it('takes the buttons off when the owner decides by typing in the Telegram chat, and only once', async () => {
  const { tg, host } = await start();
  const { id, messageId } = await askOwner(tg, host);
  tg.message({ chat: { id: OWNER, type: 'private' }, from: { id: OWNER }, text: `deny ${id}` });
  await eventually('the request denied', () => host.store.approvals.get(id)?.status === 'denied');
  await buttonsRemoved(tg, messageId);
  expect(await buttonEditsAfterStop(tg, host, messageId)).toHaveLength(1);
}, 30_000);

it('takes the buttons off when the owner decides from the CLI (the console admin chat), and only once', async () => {
  const { tg, host } = await start();
  const { id, messageId } = await askOwner(tg, host);
  // What `carapace approve <id>` does: the owner's command in the console's admin chat, its answer awaited.
  const answered = await sendAndWait({
    client: createLocalClient(paths.socketFile),
    group: 'main',
    text: `approve ${id}`,
    timeoutMs: 10_000,
    onlyCommandAnswer: true,
    onReply: () => undefined,
  });
  expect(answered.kind).toBe('answered');
  expect(host.store.approvals.get(id)?.status).toBe('approved');
  await buttonsRemoved(tg, messageId);
  expect(await buttonEditsAfterStop(tg, host, messageId)).toHaveLength(1);
}, 30_000);

it('takes the buttons off when the request expires, and a later press of the dead button sends no second edit', async () => {
  const { tg, host } = await start();
  const { id, messageId } = await askOwner(tg, host);
  for (const end of endRuns) end();
  await eventually('the request expired', () => host.store.approvals.get(id)?.status === 'expired');
  await buttonsRemoved(tg, messageId);
  // A press that was already on its way: answered by the host ("expired"), no second edit.
  tg.push({
    callback_query: {
      id: 'late-press',
      from: { id: OWNER, is_bot: false, first_name: 'Owner' },
      chat_instance: 'c',
      data: `approve ${id}`,
      message: { message_id: messageId, date: 1, chat: { id: OWNER, type: 'private' }, text: 'request' },
    },
  });
  await eventually('the late press answered', () =>
    ownerMessages(tg).find(
      (s) => s.text.includes(`Request ${id} expired`) && s.text.includes('counts as denied'),
    ),
  );
  expect(await buttonEditsAfterStop(tg, host, messageId)).toHaveLength(1);
}, 30_000);

it('tells the admin chats about privacy mode once, not again after a restart', async () => {
  const first = await start({ privacy: true });
  const note = await eventually('the privacy note in the owner chat', () =>
    ownerMessages(first.tg).find((s) => s.text.includes('/setprivacy')),
  );
  expect(note.text).toContain('Disable');
  const notes = (h: RunningHost) =>
    h.store.db
      .prepare("SELECT channel, chat_id AS chatId FROM outbox WHERE text LIKE '%/setprivacy%' ORDER BY id")
      .all() as { channel: string; chatId: string }[];
  const once = [
    { channel: 'local', chatId: 'main' },
    { channel: 'telegram', chatId: String(OWNER) },
  ];
  expect(notes(first.host)).toEqual(once);
  await first.host.stop('restart');
  const polls = first.tg.calls.filter((c) => c.method === 'getUpdates').length;
  const second = await start({ again: true });
  // Polling again means the channel reported itself connected, with the note, to the new host.
  await eventually(
    'polling after the restart',
    () => second.tg.calls.filter((c) => c.method === 'getUpdates').length > polls,
  );
  expect(notes(second.host)).toEqual(once);
}, 30_000);
