import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewMessage } from '../../../host/store/messages-store.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
let store: Store;
let seq = 0;

beforeEach(() => {
  store = openStore({ file: path.join(tempDir(), 'carapace.db') });
  store.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
  store.groups.add({ id: 'work', channel: 'local', chatId: 'work', name: 'Work', isAdmin: false });
});
afterEach(() => store.close());

function msg(groupId: string, fields: Partial<NewMessage> = {}): NewMessage {
  seq += 1;
  return {
    groupId,
    channel: 'local',
    chatId: groupId,
    externalId: `ext-${seq}`,
    senderId: 'u1',
    senderName: 'Ann',
    text: `message ${seq}`,
    sentAt: new Date(1_700_000_000_000 + seq * 1000).toISOString(),
    triggers: false,
    ...fields,
  };
}

function insert(m: NewMessage): number {
  const id = store.messages.insert(m);
  if (id === undefined) throw new Error('expected the message to be stored');
  return id;
}

describe('messages store', () => {
  it('stores a message and returns it with its fields intact', () => {
    const m = msg('family', { text: 'hi @Andy', triggers: true, senderName: 'Bob' });
    const id = insert(m);
    expect(store.messages.after('family', 0)).toEqual([{ id, ...m }]);
  });

  it('drops a message already stored under the same channel, chat and external id', () => {
    const m = msg('family', { externalId: 'dup' });
    const id = insert(m);
    expect(store.messages.insert({ ...m, text: 'edited copy' })).toBeUndefined();
    expect(store.messages.after('family', 0).map((r) => [r.id, r.text])).toEqual([[id, m.text]]);
    // The same external id in another chat is a different message.
    expect(store.messages.insert(msg('work', { externalId: 'dup' }))).toBeGreaterThan(id);
  });

  it('refuses a message for a group that does not exist', () => {
    expect(() => store.messages.insert(msg('ghost'))).toThrow(/FOREIGN KEY/);
  });

  it('after() returns the newest messages past the cursor, in id order, up to the limit', () => {
    const f1 = insert(msg('family'));
    insert(msg('work'));
    const f2 = insert(msg('family'));
    const f3 = insert(msg('family'));
    expect(store.messages.after('family', 0).map((m) => m.id)).toEqual([f1, f2, f3]);
    expect(store.messages.after('family', f1).map((m) => m.id)).toEqual([f2, f3]);
    expect(store.messages.after('family', f3)).toEqual([]);
    // A long backlog keeps its most recent messages: the trigger is the newest, never cut off.
    expect(store.messages.after('family', 0, 2).map((m) => m.id)).toEqual([f2, f3]);
  });

  it('latestTriggerAfter() finds the newest triggering message past the cursor', () => {
    expect(store.messages.latestTriggerAfter('family', 0)).toBeUndefined();
    const t1 = insert(msg('family', { triggers: true }));
    const t2 = insert(msg('family', { triggers: true }));
    insert(msg('family'));
    insert(msg('work', { triggers: true }));
    expect(store.messages.latestTriggerAfter('family', 0)).toBe(t2);
    expect(store.messages.latestTriggerAfter('family', t1)).toBe(t2);
    expect(store.messages.latestTriggerAfter('family', t2)).toBeUndefined();
  });

  it('groupsWithPendingTriggers() lists groups with a trigger past their cursor', () => {
    expect(store.messages.groupsWithPendingTriggers()).toEqual([]);
    insert(msg('family'));
    expect(store.messages.groupsWithPendingTriggers()).toEqual([]);
    const wt = insert(msg('work', { triggers: true }));
    const ft = insert(msg('family', { triggers: true }));
    expect(store.messages.groupsWithPendingTriggers()).toEqual(['family', 'work']);

    store.groups.advanceCursor('work', wt);
    expect(store.messages.groupsWithPendingTriggers()).toEqual(['family']);
    // Context after the cursor does not make a group pending; a trigger does.
    store.groups.advanceCursor('family', ft);
    insert(msg('family'));
    expect(store.messages.groupsWithPendingTriggers()).toEqual([]);
    insert(msg('family', { triggers: true }));
    expect(store.messages.groupsWithPendingTriggers()).toEqual(['family']);
  });
});
