import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { approvalActions } from '../../../host/admin/approval-message.ts';
import { splitForChannel } from '../../../host/channels/outbox-dispatcher.ts';
import { openStore, type Store } from '../../../host/store/store.ts';

let store: Store | undefined;
let dir: string | undefined;
afterEach(() => {
  store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const item = (text: string) => ({
  idempotencyKey: 'approval:ab12cd',
  groupId: 'main',
  channel: 'telegram',
  chatId: '7001',
  runId: null,
  text,
  actions: approvalActions('ab12cd'),
});

it('keeps the buttons of a piece through SQLite, and only on the last piece of a split request', () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-actions-'));
  store = openStore({ file: path.join(dir, 'carapace.db') });
  const pieces = splitForChannel(item(`${'a'.repeat(30)}\n\n${'b'.repeat(30)}`), 40);
  expect(pieces.map((p) => p.actions?.length ?? 0)).toEqual([0, 2]);
  store.outbox.addAll(pieces);
  store.outbox.add({ ...item('plain'), idempotencyKey: 'plain', actions: undefined });
  const due = store.outbox.due();
  expect(due.map((d) => d.actions)).toEqual([
    undefined,
    [
      { label: 'Approve', command: 'approve ab12cd' },
      { label: 'Deny', command: 'deny ab12cd' },
    ],
    undefined,
  ]);
});
