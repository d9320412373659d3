/**
 * Admin chats over two channels, through the real host wiring (startHost) with an in-process runner:
 * the console and a second channel acting as the owner's (the test socket channel, whose owner is attested
 * from platform facts). Approval requests reach both, a decision in one is confirmed in the other and runs
 * once, a non-owner's approval is ignored and audited, the owner's message from the second channel joins
 * the admin conversation and is answered there, unregistered chats are remembered without their content.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { main } from '../../../host/cli/main.ts';
import { newClientMessageId } from '../../../host/channels/local/local-api.ts';
import { createLocalClient } from '../../../host/channels/local/local-client.ts';
import { resolvePaths, type CarapacePaths } from '../../../host/config/paths.ts';
import { hostConfigSchema } from '../../../host/config/schema.ts';
import type { ApprovalService } from '../../../host/admin/approval-service.ts';
import { startHost, type RunningHost } from '../../../host/app/host.ts';
import type { AgentRunner, RunOutcome } from '../../../host/router/agent-runner.ts';
import {
  createSocketChannel,
  FAKE_OWNER,
  postToSocketChannel,
  socketChannelDeliveries,
  type SocketChannel,
} from '../../fakes/socket-channel.ts';
import { eventually as eventuallyWithin } from '../../e2e/e2e-harness.ts';
import { askRiskyCommand, RISKY_PARAMS } from '../../helpers/ask-risky-command.ts';

/** Each wait well inside the test's own timeout, so a failure names what did not happen. */
const eventually = <T>(what: string, check: () => T | undefined | false) =>
  eventuallyWithin(what, check, 8_000);

let dir: string;
let paths: CarapacePaths;
let host: RunningHost;
let fake: SocketChannel;
let executed: string[];
let seq = 0;
const fakeSocket = () => path.join(dir, 'fake.sock');
const deliveries = () => socketChannelDeliveries(path.join(dir, 'fake-deliveries.jsonl'));
const post = (body: { chatId: string; text: string; senderId?: string; chatTitle?: string }) =>
  postToSocketChannel(fakeSocket(), { externalId: `x${(seq += 1)}`, ...body }) as Promise<{
    stored: boolean;
  }>;

/** A runner that asks the owner before its "risky" step and says what happened; others echo. */
function approvalRunner(approvals: () => ApprovalService): AgentRunner {
  return {
    start(ctx, callbacks) {
      const done = (async (): Promise<RunOutcome> => {
        const last = ctx.messages.at(-1)?.text ?? '';
        if (last.includes('unanswerable'))
          return { ok: false, reason: 'the provider refused the key', retryable: false };
        if (last.includes('risky')) {
          const r = await askRiskyCommand(approvals(), ctx);
          if (r.outcome === 'approved' && approvals().consume(r.id, RISKY_PARAMS)) {
            executed.push(r.id);
            await callbacks.reply('executed');
          } else await callbacks.reply(`not executed: ${r.outcome}`);
        } else await callbacks.reply(`echo: ${last}`);
        return { ok: true, reason: 'completed' };
      })();
      return { accepted: Promise.resolve(), input: async () => false, stop: () => undefined, done };
    },
  };
}

beforeEach(async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-admin-chats-')));
  paths = resolvePaths({
    env: { CARAPACE_CONFIG_DIR: path.join(dir, 'config'), CARAPACE_DATA_DIR: path.join(dir, 'data') },
    cwd: dir,
  });
  executed = [];
  fake = createSocketChannel({
    socketFile: fakeSocket(),
    deliveriesFile: path.join(dir, 'fake-deliveries.jsonl'),
    dieMarker: path.join(dir, 'never'),
  });
  let approvals: ApprovalService | undefined;
  host = await startHost({
    paths,
    config: hostConfigSchema.parse({
      outbox: { retry_base_ms: 10, retry_max_ms: 100 },
      groups: { quiet: { trigger: 'owner' }, club: { trigger: 'always', allowed_senders: ['alice'] } },
    }),
    logger: pino({ level: process.env.DEBUG_LOG ? 'debug' : 'silent' }),
    redact: (s) => s,
    extraChannels: [fake],
    createRunner: async (deps) => {
      approvals = deps.approvals;
      return { runner: approvalRunner(() => approvals as ApprovalService), close: async () => undefined };
    },
  });
  host.store.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
});

afterEach(async () => {
  await host.stop('test over');
  fs.rmSync(dir, { recursive: true, force: true });
});

const consoleRows = () =>
  host.store.db
    .prepare(
      "SELECT idempotency_key AS key, text, status FROM outbox WHERE channel = 'local' AND chat_id = 'main' ORDER BY id",
    )
    .all() as { key: string; text: string; status: string }[];

it('sends an approval request to both admin chats; approved in one, confirmed in the other, run once', async () => {
  const client = createLocalClient(paths.socketFile);
  await client.postMessage({
    group: 'family',
    text: '@Andy do the risky thing',
    clientMessageId: newClientMessageId(),
  });
  const request = await eventually('the request in the console', () =>
    consoleRows().find((r) => r.key.startsWith('approval:')),
  );
  const id = request.key.slice('approval:'.length);
  await eventually('the request in the second admin chat', () =>
    deliveries().find(
      (d) => d.chatId === FAKE_OWNER.chatId && d.key === `approval:${id}@fake:${FAKE_OWNER.chatId}`,
    ),
  );

  // Someone else in the owner's chat (a forwarded message, a shared device): ignored, audited, not stored.
  const intruder = await post({ chatId: FAKE_OWNER.chatId, senderId: 'intruder', text: `approve ${id}` });
  expect(intruder.stored).toBe(false);
  expect(host.store.approvals.get(id)?.status).toBe('pending');
  const ignored = host.store.audit.tail(20).filter((r) => r.operation === 'admin.command');
  expect(ignored.map((r) => [r.decision, r.approver])).toEqual([['ignored', 'fake:intruder']]);

  await post({ chatId: FAKE_OWNER.chatId, senderId: FAKE_OWNER.userId, text: `approve ${id}` });
  await eventually('the run to execute', () => executed.length === 1);
  expect(host.store.approvals.get(id)).toMatchObject({
    status: 'executed',
    decidedBy: `fake:${FAKE_OWNER.userId}`,
  });
  // Answered where it was decided, confirmed in the console.
  await eventually('the answer in the second admin chat', () =>
    deliveries().find((d) => d.chatId === FAKE_OWNER.chatId && d.text.startsWith(`Approved ${id}`)),
  );
  await eventually('the confirmation in the console', () =>
    consoleRows().find((r) => r.text.startsWith(`Decided in fake: Approved ${id}`)),
  );
  // A second decision changes nothing and runs nothing.
  await client.postMessage({ group: 'main', text: `approve ${id}`, clientMessageId: newClientMessageId() });
  await eventually('the console answer', () =>
    consoleRows().find((r) => r.text.startsWith(`Request ${id} was approved by fake:${FAKE_OWNER.userId}`)),
  );
  expect(executed).toEqual([id]);
  expect(consoleRows().filter((r) => r.key.startsWith('approval:'))).toHaveLength(1);
});

it("joins the owner's message from another channel to the admin conversation and answers there", async () => {
  const r = await post({
    chatId: FAKE_OWNER.chatId,
    senderId: FAKE_OWNER.userId,
    text: 'hello from my phone',
  });
  expect(r.stored).toBe(true);
  expect(host.store.messages.after('main', 0).map((m) => [m.channel, m.text])).toEqual([
    ['fake', 'hello from my phone'],
  ]);
  await eventually('the answer in the chat it came from', () =>
    deliveries().find((d) => d.chatId === FAKE_OWNER.chatId && d.text === 'echo: hello from my phone'),
  );
  expect(consoleRows().filter((r) => r.text.startsWith('echo:'))).toEqual([]);
});

it('remembers an unregistered chat (never its content) and lists it in carapace chats', async () => {
  const r = await post({
    chatId: '-100555',
    chatTitle: 'Book club',
    text: 'a secret plan for the book club',
  });
  expect(r.stored).toBe(false);
  const everything = JSON.stringify(
    ['messages', 'outbox', 'chats_seen', 'audit'].map((t) =>
      host.store.db.prepare(`SELECT * FROM ${t}`).all(),
    ),
  );
  expect(everything).not.toContain('secret plan');
  const out = new PassThrough();
  let text = '';
  out.on('data', (c: Buffer) => (text += c.toString('utf8')));
  const code = await main(['chats', '--json'], {
    stdout: out,
    stderr: new PassThrough(),
    stdin: new PassThrough(),
    env: { CARAPACE_CONFIG_DIR: paths.configDir, CARAPACE_DATA_DIR: paths.dataDir },
    cwd: dir,
  });
  expect(code).toBe(0);
  expect(JSON.parse(text)).toEqual([
    expect.objectContaining({ channel: 'fake', chatId: '-100555', title: 'Book club' }),
  ]);
});

it('announces a channel that logged out in the other admin chats', async () => {
  fake.platform.logOut();
  await eventually('the notice in the console', () =>
    consoleRows().find((r) => /The fake channel is logged-out: the fake session was logged out/.test(r.text)),
  );
});

it('lets allowed_senders and trigger = "owner" decide who starts a run', async () => {
  host.store.groups.add({ id: 'quiet', channel: 'fake', chatId: '-100777', name: 'Quiet', isAdmin: false });
  host.store.groups.add({ id: 'club', channel: 'fake', chatId: '-100778', name: 'Club', isAdmin: false });
  // "owner": a member's explicit address is context only.
  await post({ chatId: '-100777', senderId: 'friend', text: '@Andy hi' });
  // "always" with allowed_senders: alice triggers without addressing; bob never, even by name.
  await post({ chatId: '-100778', senderId: 'bob', text: '@Andy what about me?' });
  await post({ chatId: '-100778', senderId: 'alice', text: 'good morning' });
  expect(host.store.messages.after('quiet', 0).map((m) => m.triggers)).toEqual([false]);
  expect(host.store.messages.after('club', 0).map((m) => [m.senderId, m.triggers])).toEqual([
    ['bob', false],
    ['alice', true],
  ]);
  await eventually('the answer to alice', () => deliveries().find((d) => d.chatId === '-100778'));
});

it('tells the owner in every admin chat that a group got no answer, and the group only a neutral apology', async () => {
  const client = createLocalClient(paths.socketFile);
  await client.postMessage({
    group: 'family',
    text: '@Andy something unanswerable',
    clientMessageId: newClientMessageId(),
  });
  const note =
    'Group family got no answer (it cannot be answered until this is fixed): the provider refused the key';
  await eventually('the note in the console admin chat', () => consoleRows().some((r) => r.text === note));
  await eventually('the note in the second admin chat', () =>
    deliveries().some((d) => d.chatId === FAKE_OWNER.chatId && d.text === note),
  );
  const family = host.store.db
    .prepare("SELECT text FROM outbox WHERE group_id = 'family' ORDER BY id")
    .all() as { text: string }[];
  expect(family.map((r) => r.text)).toEqual(['Sorry, I cannot answer right now. The owner has been told.']);
});
