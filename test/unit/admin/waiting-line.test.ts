import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
  const tell = createWaitingLine({
    approvals: store.approvals,
    groups: store.groups,
    enqueue: (i) => sent.push(i),
  });
  return { store, ask, sent, tell };
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

it('says nothing for the admin group (the owner has the request itself), a decided request or an unknown one', () => {
  const { store, ask, sent, tell } = setup();
  const admin = store.groups.list().find((g) => g.isAdmin);
  ask('adm234', admin?.id ?? 'main');
  tell('adm234');
  ask('dec234', 'family');
  store.approvals.decide('dec234', 'denied', 1, 'local:owner');
  tell('dec234');
  tell('nope23');
  expect(sent).toEqual([]);
});
