import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { createWaitingLine, WAITING_FOR_OWNER_LINE } from '../../../host/admin/waiting-line.ts';
import type { NewOutboxItem } from '../../../host/store/outbox-store.ts';
import { openStore, type Store } from '../../../host/store/store.ts';

let store: Store | undefined;
let dir = '';
afterEach(() => {
  store?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function setup() {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-waiting-'));
  store = openStore({ file: path.join(dir, 'carapace.db') });
  store.groups.add({ id: 'family', channel: 'telegram', chatId: '-1001', name: 'Family', isAdmin: false });
  const ask = (id: string, groupId: string) =>
    (store as Store).approvals.insert({
      id,
      runId: 3,
      groupId,
      operation: 'bash',
      reason: 'secret plans',
      paramsJson: '{"command":"rm -rf /srv/secret"}',
      paramsHash: 'h',
      createdAt: 0,
      expiresAt: 60_000,
    });
  const sent: NewOutboxItem[] = [];
  const unsent: { chatId: string; platformId: string }[] = [];
  const line = createWaitingLine({
    approvals: store.approvals,
    groups: store.groups,
    outbox: store.outbox,
    enqueue: (i) => sent.push(i),
    channelFor: () => ({
      unsend: async (target: { chatId: string; platformId: string }) => {
        unsent.push(target);
        return true;
      },
    }),
    logger: pino({ level: 'silent' }),
  });
  const tell = line.asked;
  /** The outbox delivers what was enqueued, as message `platformId` on the platform. */
  const deliver = (platformId: string) => {
    for (const item of sent.splice(0)) (store as Store).outbox.add(item);
    const [row] = (store as Store).outbox.due();
    if (!row) throw new Error('nothing to deliver');
    (store as Store).outbox.markSent(row.id, {
      channel: row.channel,
      chatId: row.chatId,
      platformIds: [platformId],
    });
    return row;
  };
  return { store, ask, sent, tell, line, unsent, deliver };
}

it("tells the asking group it waits for the owner's OK, keyed by the request, and nothing of the request", () => {
  const { ask, sent, tell } = setup();
  ask('abc234', 'family');
  tell('abc234');
  expect(sent).toEqual([
    {
      idempotencyKey: 'waiting-for-owner:abc234',
      groupId: 'family',
      channel: 'telegram',
      chatId: '-1001',
      runId: 3,
      text: WAITING_FOR_OWNER_LINE,
    },
  ]);
  expect(WAITING_FOR_OWNER_LINE).not.toMatch(/bash|secret|rm/);
});

it('says nothing for the admin group or a console group (the owner has the request itself), a decided request or an unknown one', () => {
  const { store, ask, sent, tell } = setup();
  store.groups.add({ id: 'desk', channel: 'local', chatId: 'desk', name: 'Desk', isAdmin: false });
  ask('loc234', 'desk');
  tell('loc234');
  const admin = store.groups.list().find((g) => g.isAdmin);
  ask('adm234', admin?.id ?? 'main');
  tell('adm234');
  ask('dec234', 'family');
  store.approvals.decide('dec234', 'denied', 1, 'local:owner');
  tell('dec234');
  tell('nope23');
  expect(sent).toEqual([]);
});

it('takes the line back once the request is settled, also when it was delivered only after that', () => {
  const { store, ask, tell, line, unsent, deliver } = setup();
  ask('abc234', 'family');
  tell('abc234');
  deliver('77');
  line.onChange('abc234');
  expect(unsent).toEqual([]);
  store.approvals.decide('abc234', 'approved', 1, 'local:owner');
  line.onChange('abc234');
  expect(unsent).toEqual([{ chatId: '-1001', platformId: '77' }]);

  // Its channel was down while the owner answered: the line goes as soon as it is delivered.
  ask('def234', 'family');
  tell('def234');
  store.approvals.decide('def234', 'denied', 2, 'local:owner');
  line.onChange('def234');
  expect(unsent).toHaveLength(1);
  line.onDelivered(deliver('78'));
  expect(unsent).toEqual([
    { chatId: '-1001', platformId: '77' },
    { chatId: '-1001', platformId: '78' },
  ]);
});
