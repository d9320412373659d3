import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createAdminCommandHandler,
  IGNORED_COMMAND_OPERATION,
} from '../../../host/admin/admin-command-handler.ts';
import { parseAdminCommand } from '../../../host/admin/admin-commands.ts';
import { createApprovalService, type ApprovalService } from '../../../host/admin/approval-service.ts';
import { isOwnerMessage } from '../../../host/admin/owner-check.ts';
import type { InboundMessage } from '../../../host/channels/channel.ts';
import { exactRedactor } from '../../../host/config/secrets.ts';
import { createApprovalsStore, type ApprovalsStore } from '../../../host/store/approvals-store.ts';
import type { GroupRecord } from '../../../host/store/groups-store.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { ownerMessage } from '../../helpers/inbound-message.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

describe('parseAdminCommand', () => {
  it.each([
    ['approve k7m2q9', { kind: 'approve', id: 'k7m2q9' }],
    ['deny k7m2q9', { kind: 'deny', id: 'k7m2q9' }],
    ['  APPROVE \t  K7M2Q9  \n', { kind: 'approve', id: 'k7m2q9' }],
    ['Deny k7m2q9', { kind: 'deny', id: 'k7m2q9' }],
    ['/approve k7m2q9', { kind: 'approve', id: 'k7m2q9' }],
    ['pending', { kind: 'pending' }],
    ['  Pending ', { kind: 'pending' }],
    ['usage', { kind: 'usage' }],
    ['/Usage', { kind: 'usage' }],
    ['usage family', { kind: 'usage', groupId: 'family' }],
    [' USAGE  Family_2 ', { kind: 'usage', groupId: 'family_2' }],
    ['web login', { kind: 'web-login' }],
    ['cancel k7m2q9ab', { kind: 'cancel-task', taskId: 'k7m2q9ab' }],
    [' /Cancel  PAYMENTS ', { kind: 'cancel-task', taskId: 'payments' }],
    [' /Web_Login ', { kind: 'web-login' }],
  ])('%j is a command', (text, expected) => {
    expect(parseAdminCommand(text)).toEqual(expected);
  });

  it.each([
    'approve it',
    'I approve k7m2q9',
    'approve k7m2q9 please',
    'approve k7m2q9.',
    'approve',
    'deny access', // six letters from the alphabet, but no digit: English, not an id
    'approve update',
    'approve k7m2q', // too short
    'approve k7m2q9x', // too long
    'approve k0m2q9', // 0 is not in the alphabet
    'approve-k7m2q9',
    'pending please',
    'what is pending?',
    'usage please tell me',
    'usage?',
    'what is our usage',
    'web login please',
    'cancel tomorrow', // o is not in a task id's alphabet
    'cancel k7m2q9a', // too short
    'cancel the k7m2q9ab task',
    '',
  ])('%j is not a command', (text) => {
    expect(parseAdminCommand(text)).toBeUndefined();
  });
});

const tempDir = useTempDirs();
const SECRET = 'sk-live-abcdef0123456789';
const redact = exactRedactor(() => [SECRET]);
const silent = pino({ level: 'silent' });

let store: Store;
let approvals: ApprovalsStore;
let service: ApprovalService;
let adminMessages: string[];
let replies: { text: string; group: string; externalId?: string }[];
let admin: GroupRecord;
let family: GroupRecord;

beforeEach(() => {
  store = openStore({ file: path.join(tempDir(), 'carapace.db'), redact });
  approvals = createApprovalsStore(store.db);
  admin = store.groups.add({
    id: 'main',
    channel: 'local',
    chatId: 'main',
    name: 'Admin console',
    isAdmin: true,
  });
  family = store.groups.add({
    id: 'family',
    channel: 'local',
    chatId: 'family',
    name: 'Family',
    isAdmin: false,
  });
  adminMessages = [];
  replies = [];
  service = createApprovalService({
    store: { approvals, audit: store.audit, transaction: store.transaction },
    notifyAdmin: async (text) => {
      adminMessages.push(text);
    },
    redact,
    logger: silent,
  });
});
afterEach(() => {
  service.close();
  store.close();
});

const flush = () => new Promise((r) => setImmediate(r));

function handler(
  ownerCheck: (m: InboundMessage, g: GroupRecord) => boolean = isOwnerMessage,
  webLogin?: (issuedTo: string) => { url: string; expiresAt: string } | undefined,
) {
  return createAdminCommandHandler({
    ...(webLogin ? { webLogin } : {}),
    approvals: service,
    isOwnerMessage: ownerCheck,
    reply: (text, group, command) => {
      replies.push({ text, group: group.id, externalId: command.externalId });
    },
    audit: store.audit,
    redact,
    logger: silent,
  });
}

const message = ownerMessage;

async function askOne() {
  const result = service.request({
    runId: 3,
    groupId: 'family',
    operation: 'web_fetch',
    reason: `post ${SECRET}`,
    params: { url: 'https://example.com' },
  });
  await flush();
  const id = /^Approval needed: (\S+)$/m.exec(adminMessages.at(-1) ?? '')?.[1];
  if (!id) throw new Error('no approval message was sent');
  return { id, result };
}

const ignoredRows = () => store.audit.tail(100).filter((r) => r.operation === IGNORED_COMMAND_OPERATION);

describe('admin command handler', () => {
  it('gives the owner a web console sign-in link in the admin chat, and nobody else one', async () => {
    const issued: string[] = [];
    const h = handler(isOwnerMessage, (to) => {
      issued.push(to);
      return { url: 'http://127.0.0.1:8750/login?token=t0ken', expiresAt: '2026-11-27T09:00:00.000Z' };
    });
    expect(h.handle(message('web login'), admin)).toBeTruthy();
    expect(h.handle(message('web login', { chatId: 'family' }), family)).toBe(false);
    expect(h.handle(message('web login', { senderId: 'guest', fromOwner: false }), admin)).toBe(false);
    await flush();
    expect(issued).toEqual(['local:owner']);
    expect(replies.map((r) => r.text)).toEqual([
      'Web console sign-in (works once, until 2026-11-27T09:00:00.000Z): http://127.0.0.1:8750/login?token=t0ken',
    ]);
    expect(ignoredRows().map((r) => JSON.parse(r.details ?? '{}').command)).toEqual([
      'web-login',
      'web-login',
    ]);
  });

  it('tells the owner how to turn the web console on when it is off', async () => {
    expect(handler(isOwnerMessage, () => undefined).handle(message('web login'), admin)).toBeTruthy();
    await flush();
    expect(replies[0]?.text).toMatch(/web console is off: set \[web\] listen/);
  });

  it('lets the owner approve in the admin chat and consumes the message', async () => {
    const { id, result } = await askOne();
    const command = message(`Approve ${id.toUpperCase()}`, { externalId: 'cmd-1' });
    expect(handler().handle(command, admin)).toBeTruthy();
    await expect(result).resolves.toEqual({ outcome: 'approved', id, by: 'local:owner' });
    await flush();
    expect(replies).toEqual([
      {
        text: `Approved ${id}: web_fetch may run once, with the parameters shown.`,
        group: 'main',
        externalId: 'cmd-1',
      },
    ]);
    expect(service.consume(id, { url: 'https://example.com' })).toBe(true);
  });

  it('lets the owner deny, and tells a replay that nothing changed', async () => {
    const { id, result } = await askOne();
    const h = handler();
    expect(h.handle(message(`deny ${id}`), admin)).toEqual({ brief: 'Denied' });
    expect(h.handle(message(`approve ${id}`), admin)).toEqual({ brief: 'Already decided' });
    await expect(result).resolves.toMatchObject({ outcome: 'denied' });
    await flush();
    expect(replies.map((r) => r.text)).toEqual([
      `Denied ${id}: web_fetch will not run.`,
      expect.stringMatching(
        new RegExp(`^Request ${id} was already denied by local:owner at .*; nothing changed\\.$`),
      ),
    ]);
    expect(approvals.get(id)?.status).toBe('denied');
  });

  it('ignores an approval from a non-admin group: not consumed, not decided, audited', async () => {
    const { id } = await askOne();
    const m = message(`approve ${id}`, { chatId: 'family' });
    expect(handler().handle(m, family)).toBe(false);
    await flush();
    expect(replies).toEqual([]);
    expect(approvals.get(id)?.status).toBe('pending');
    expect(ignoredRows()).toMatchObject([
      {
        groupId: 'family',
        decision: 'ignored',
        reason: 'approval commands are only accepted in the admin chat',
        approver: 'local:owner',
      },
    ]);
    expect(JSON.parse(ignoredRows()[0]?.details ?? '{}')).toMatchObject({
      command: 'approve',
      approvalId: id,
    });
  });

  it('ignores an approval in the admin chat from anyone but the owner', async () => {
    const { id } = await askOne();
    const h = handler();
    expect(h.handle(message(`approve ${id}`, { senderId: 'someone-else', fromOwner: false }), admin)).toBe(
      false,
    );
    // Only the adapter's attestation counts: the console's owner id on another channel is nobody's.
    expect(h.handle(message(`approve ${id}`, { channel: 'whatsapp', fromOwner: false }), admin)).toBe(false);
    expect(approvals.get(id)?.status).toBe('pending');
    expect(ignoredRows().map((r) => [r.reason, r.approver])).toEqual([
      ['approval commands are only accepted from the owner', 'local:someone-else'],
      ['approval commands are only accepted from the owner', 'whatsapp:owner'],
    ]);
  });

  it("ignores an approval the owner forwarded: someone else's words, even their own earlier ones, are no command", async () => {
    const { id } = await askOne();
    const h = handler();
    for (const authorIsOwner of [false, true]) {
      const forwarded = message(`approve ${id}`, {
        origin: { kind: 'forwarded', author: authorIsOwner ? 'me' : 'Eve', authorIsOwner },
      });
      expect(h.handle(forwarded, admin)).toBe(false);
    }
    expect(approvals.get(id)?.status).toBe('pending');
    expect(ignoredRows().map((r) => r.reason)).toEqual([
      'a forwarded command is someone else’s words, not the owner’s command',
      'a forwarded command is someone else’s words, not the owner’s command',
    ]);
    // The owner's own words, quoting someone, still decide.
    const own = message(`deny ${id}`, {
      quoted: { text: 'approve it', author: 'Eve', authorIsOwner: false },
    });
    expect(h.handle(own, admin)).toBeTruthy();
    expect(approvals.get(id)?.status).toBe('denied');
  });

  it("takes the owner on any channel, by the adapter's attestation alone", async () => {
    const { id } = await askOne();
    expect(
      handler().handle(
        message(`approve ${id}`, { channel: 'telegram', senderId: '4711', chatId: '4711' }),
        admin,
      ),
    ).toEqual({ brief: 'Approved' });
    expect(approvals.get(id)?.status).toBe('approved');
    expect(approvals.get(id)?.decidedBy).toBe('telegram:4711');
  });

  it('treats an owner check that throws as "not the owner"', async () => {
    const { id } = await askOne();
    const h = handler(() => {
      throw new Error('metadata missing');
    });
    expect(h.handle(message(`approve ${id}`), admin)).toBe(false);
    expect(approvals.get(id)?.status).toBe('pending');
    expect(ignoredRows()).toHaveLength(1);
  });

  it('passes ordinary messages through untouched and unaudited', () => {
    const h = handler();
    for (const text of ['approve it', 'I approve abc234', 'hello', 'deny access']) {
      expect(h.handle(message(text), admin)).toBe(false);
      expect(h.handle(message(text, { chatId: 'family' }), family)).toBe(false);
    }
    expect(store.audit.tail(100)).toEqual([]);
  });

  it('answers "pending" with the open requests, redacted', async () => {
    const { id } = await askOne();
    expect(handler().handle(message('pending'), admin)).toBeTruthy();
    await flush();
    expect(replies).toHaveLength(1);
    const text = replies[0]?.text ?? '';
    expect(text).toContain('1 approval request waiting:');
    expect(text).toContain(
      `- ${id}: "web_fetch" for group "family", run 3, expires in 5 min. Reason: "post [REDACTED]"`,
    );
    expect(text).not.toContain(SECRET);
  });

  it('consumes an owner command with an unknown id and says so', async () => {
    expect(handler().handle(message('approve zz22zz'), admin)).toEqual({ brief: 'Unknown request' });
    await flush();
    expect(replies.map((r) => r.text)).toEqual([
      'No approval request has the id "zz22zz". Send "pending" to list the open ones.',
    ]);
  });

  it('cancels a task on "cancel <id>" from the owner, and leaves words that name no task to the agent', async () => {
    const cancelled: { taskId: string; by: string }[] = [];
    const h = createAdminCommandHandler({
      approvals: service,
      isOwnerMessage,
      cancelTask: (taskId, by) => {
        if (taskId !== 'k7m2q9ab') return undefined;
        cancelled.push({ taskId, by });
        return `Task ${taskId} of family is cancelled.`;
      },
      reply: (text, group) => void replies.push({ text, group: group.id }),
      audit: store.audit,
      redact,
      logger: silent,
    });
    expect(h.handle(message('cancel K7M2Q9AB'), admin)).toBeTruthy();
    expect(h.handle(message('cancel payments'), admin)).toBe(false);
    // Elsewhere it is conversation, whoever says it: nothing is cancelled and nothing is audited.
    expect(h.handle(message('cancel k7m2q9ab', { chatId: 'family' }), family)).toBe(false);
    await flush();
    expect(cancelled).toEqual([{ taskId: 'k7m2q9ab', by: 'local:owner' }]);
    expect(replies).toEqual([{ text: 'Task k7m2q9ab of family is cancelled.', group: 'main' }]);
    // A stranger in the admin chat cannot cancel: an ignored attempt, audited.
    expect(h.handle(message('cancel k7m2q9ab', { fromOwner: false, senderId: 'guest' }), admin)).toBe(false);
    expect(cancelled).toHaveLength(1);
    expect(store.audit.tail(10).map((r) => r.reason)).toEqual([
      'admin commands are only accepted from the owner',
    ]);
  });

  it('answers "usage" in the admin chat with the spend report, for one group when named', async () => {
    const asked: (string | undefined)[] = [];
    const h = createAdminCommandHandler({
      approvals: service,
      isOwnerMessage,
      usage: (groupId) => {
        asked.push(groupId);
        return `report for ${groupId ?? 'all'}`;
      },
      reply: (text, group) => void replies.push({ text, group: group.id }),
      audit: store.audit,
      redact,
      logger: silent,
    });
    expect(h.handle(message('usage'), admin)).toBeTruthy();
    expect(h.handle(message('usage family'), admin)).toBeTruthy();
    await flush();
    expect(asked).toEqual([undefined, 'family']);
    expect(replies).toEqual([
      { text: 'report for all', group: 'main' },
      { text: 'report for family', group: 'main' },
    ]);
  });

  it('leaves "usage" in another group as an ordinary message, audited as an admin command attempt', async () => {
    let reports = 0;
    const h = createAdminCommandHandler({
      approvals: service,
      isOwnerMessage,
      usage: () => String(++reports),
      reply: (text, group) => void replies.push({ text, group: group.id }),
      audit: store.audit,
      redact,
      logger: silent,
    });
    expect(h.handle(message('usage', { chatId: 'family' }), family)).toBe(false);
    expect(h.handle(message('usage', { fromOwner: false, senderId: 'guest' }), admin)).toBe(false);
    await flush();
    expect(reports).toBe(0);
    expect(replies).toEqual([]);
    expect(store.audit.tail(10).map((r) => r.reason)).toEqual([
      'admin commands are only accepted in the admin chat',
      'admin commands are only accepted from the owner',
    ]);
  });
});
