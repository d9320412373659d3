/**
 * Admin chats and delivery outcomes end to end: a real host with real containers, the console and a second
 * channel acting as the owner's (the test socket channel, whose owner is attested from platform facts: their
 * user id in their private chat). An approval asked by a non-admin group's run reaches both admin chats, a
 * non-owner's approval in the owner's chat is ignored and audited, the owner's decides once and is confirmed
 * in the console. A chat the bot was removed from gets its replies dead-lettered and the owner told once while
 * another chat's replies flow; a chat the platform moved is re-bound and answered at its new id.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WAITING_FOR_OWNER_LINE } from '../../host/admin/waiting-line.ts';
import { CHAT_MOVED_OPERATION } from '../../host/channels/delivery-outcomes.ts';
import {
  createSocketChannel,
  FAKE_OWNER,
  postToSocketChannel,
  socketChannelDeliveries,
  type SocketChannel,
} from '../fakes/socket-channel.ts';
import {
  auditMark,
  auditSince,
  bash,
  nextApproval,
  runTools,
  securityResponder,
} from '../fakes/security-responders.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { eventually, startE2eHost, type E2eHost } from './e2e-harness.ts';

const OPS = { id: 'ops', chatId: '-100200' };
const GONE = { id: 'gone', chatId: '-100300' };
const LIVE = { id: 'live', chatId: '-100301' };
const MOVING = { id: 'moving', chatId: '-100400', movedTo: '-100401' };

await describeDocker('e2e admin chats: the console and a second owner chat, through real containers', () => {
  let h: E2eHost;
  let fake: SocketChannel | undefined;
  let dir: string;
  let seq = 0;
  const socketFile = () => path.join(dir, 'fake.sock');
  const deliveries = () => socketChannelDeliveries(path.join(dir, 'fake-deliveries.jsonl'));
  // The group's "waiting for the owner's OK" line is liveness (test/integration/channels/telegram-liveness),
  // not an answer: these tests read the answers.
  const toChat = (chatId: string) =>
    deliveries().filter((d) => d.chatId === chatId && d.text !== WAITING_FOR_OWNER_LINE);
  const post = (chatId: string, text: string, senderId = 'member') =>
    postToSocketChannel(socketFile(), { externalId: `m${(seq += 1)}`, chatId, senderId, text }) as Promise<{
      stored: boolean;
    } | null>;
  const platform = () => {
    if (!fake) throw new Error('the socket channel was not built');
    return fake.platform;
  };
  const consoleTexts = () =>
    h.host.store.db
      .prepare("SELECT text FROM outbox WHERE channel = 'local' AND chat_id = 'main' ORDER BY id")
      .all()
      .map((r) => (r as { text: string }).text);

  beforeAll(async () => {
    h = await startE2eHost({
      config: { runs: { max_attempts: 1 }, outbox: { retry_base_ms: 100, retry_max_ms: 1_000 } },
      channels: async (paths) => {
        dir = path.join(paths.dataDir, 'socket-channel');
        fs.mkdirSync(dir, { recursive: true });
        fake = createSocketChannel({
          socketFile: socketFile(),
          deliveriesFile: path.join(dir, 'fake-deliveries.jsonl'),
          dieMarker: path.join(dir, 'never'),
        });
        return [fake];
      },
    });
    // Registered as `carapace groups add` does (the CLI, a separate process, knows only configured channels).
    for (const g of [OPS, GONE, LIVE, MOVING])
      h.host.store.groups.add({ id: g.id, channel: 'fake', chatId: g.chatId, name: g.id, isAdmin: false });
  }, 240_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  it("asks in both admin chats; a non-owner's approval is ignored and audited; the owner's runs it once, confirmed in the console", async () => {
    const file = `FLAGGED-admin-${seq}`;
    h.fake.setResponder(securityResponder({ ops: runTools([bash(`touch ${file} && mkfifo fifo-${file}`)]) }));
    const mark = auditMark(h);
    await post(OPS.chatId, '@Andy run the flagged command');
    const ask = await nextApproval(h, new Set(), file);
    await eventually('the request in the second admin chat', () =>
      toChat(FAKE_OWNER.chatId).find((d) => d.text.includes(ask.id) && d.key.startsWith('approval:')),
    );

    // Someone else writing in the owner's chat (a shared device, a forwarded message): not the owner.
    const intruder = await post(FAKE_OWNER.chatId, `approve ${ask.id}`, 'intruder');
    expect(intruder?.stored).toBe(false);
    const ignored = await eventually('the ignored approval audited', () =>
      auditSince(h, mark).find((r) => r.operation === 'admin.command' && r.decision === 'ignored'),
    );
    expect(ignored.approver).toBe('fake:intruder');
    expect(h.host.store.approvals.get(ask.id)?.status).toBe('pending');

    await post(FAKE_OWNER.chatId, `approve ${ask.id}`, FAKE_OWNER.userId);
    await eventually(
      'the command executed',
      () => h.host.store.approvals.get(ask.id)?.status === 'executed',
      60_000,
    );
    expect(h.host.store.approvals.get(ask.id)?.decidedBy).toBe(`fake:${FAKE_OWNER.userId}`);
    await eventually('the group answered', () => toChat(OPS.chatId)[0], 60_000);
    expect(fs.existsSync(path.join(h.paths.groupsDir, OPS.id, file))).toBe(true);
    await eventually('the answer in the chat it was decided in', () =>
      toChat(FAKE_OWNER.chatId).find((d) => d.text.startsWith(`Approved ${ask.id}`)),
    );
    await eventually('the confirmation in the console', () =>
      consoleTexts().find((t) => t.startsWith(`Decided in fake: Approved ${ask.id}`)),
    );

    // The owner decides again from the console: told who decided, nothing runs twice.
    const again = await h.send('main', `approve ${ask.id}`);
    expect(again.stdout).toContain(`Request ${ask.id} was approved by fake:${FAKE_OWNER.userId}`);
    const decisions = auditSince(h, mark)
      .filter((r) => r.operation === 'bash')
      .map((r) => r.decision);
    expect(decisions.filter((d) => d === 'approval-executed')).toHaveLength(1);
    h.fake.setResponder(undefined);
  }, 180_000);

  it("dead-letters a removed chat's replies and tells the owner once, while another chat's replies flow", async () => {
    const removed = { kind: 'permanent' as const, reason: 'the bot was removed from the chat' };
    platform().answerNext(GONE.chatId, removed);
    platform().answerNext(GONE.chatId, removed);
    await post(GONE.chatId, '@Andy first to the gone chat');
    await post(LIVE.chatId, '@Andy hello from the live chat');
    await eventually(
      'the first reply dead-lettered',
      () => h.outbox(GONE.id).some((r) => r.status === 'dead'),
      90_000,
    );
    await eventually('the live chat answered', () => toChat(LIVE.chatId)[0], 90_000);
    await post(GONE.chatId, '@Andy second to the gone chat');
    await post(LIVE.chatId, '@Andy still here?');
    await eventually('the live chat answered again', () => toChat(LIVE.chatId)[1], 90_000);
    await eventually(
      'both replies of the gone chat dead-lettered',
      () => h.outbox(GONE.id).filter((r) => r.status === 'dead').length === 2,
      90_000,
    );
    expect(toChat(GONE.chatId)).toEqual([]);
    expect(toChat(LIVE.chatId).map((d) => d.text)).toEqual([
      expect.stringContaining('hello from the live chat'),
      expect.stringContaining('still here?'),
    ]);
    const notice = /^Replies to group "gone" \(fake chat -100300\) cannot be delivered: the bot was removed/;
    expect(consoleTexts().filter((t) => notice.test(t))).toHaveLength(1);
    expect(toChat(FAKE_OWNER.chatId).filter((d) => notice.test(d.text))).toHaveLength(1);
  }, 240_000);

  it('re-binds a group whose chat moved and sends that reply and the next one to the new id', async () => {
    const mark = auditMark(h);
    platform().answerNext(MOVING.chatId, {
      kind: 'moved',
      newChatId: MOVING.movedTo,
      reason: 'the group became a supergroup',
    });
    await post(MOVING.chatId, '@Andy before the move');
    const first = await eventually('the reply at the new id', () => toChat(MOVING.movedTo)[0], 90_000);
    expect(first.text).toContain('before the move');
    expect(h.host.store.groups.get(MOVING.id)?.chatId).toBe(MOVING.movedTo);
    const moved = auditSince(h, mark).filter((r) => r.operation === CHAT_MOVED_OPERATION);
    expect(moved.map((r) => [r.groupId, r.decision])).toEqual([[MOVING.id, 'rebound']]);
    // The members now write from the new chat: it is the group's, and answered there (also when the run
    // that answered before the move is still active and takes this in as a follow-up).
    await post(MOVING.movedTo, '@Andy after the move');
    const second = await eventually('the next reply at the new id', () => toChat(MOVING.movedTo)[1], 90_000);
    expect(second.text).toContain('after the move');
    expect(toChat(MOVING.chatId)).toEqual([]);
  }, 180_000);
});
