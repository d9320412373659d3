import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GroupExistsError, type NewGroup } from '../../../host/store/groups-store.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
const NOW = new Date('2025-03-01T12:00:00.000Z');
let store: Store;

beforeEach(() => {
  store = openStore({ file: path.join(tempDir(), 'carapace.db'), now: () => NOW });
});
afterEach(() => store.close());

const family: NewGroup = {
  id: 'family',
  channel: 'telegram',
  chatId: '-100123',
  name: 'Family',
  isAdmin: false,
};

describe('groups store', () => {
  it('adds a group and reads it back by id and by chat', () => {
    const g = store.groups.add(family);
    expect(g).toEqual({
      id: 'family',
      channel: 'telegram',
      chatId: '-100123',
      name: 'Family',
      isAdmin: false,
      networkMode: 'gateway',
      agentCursor: 0,
      taint: { corruption: false, secret: false },
      createdAt: NOW.toISOString(),
    });
    expect(store.groups.get('family')).toEqual(g);
    expect(store.groups.findByChat('telegram', '-100123')).toEqual(g);
    expect(store.groups.findByChat('whatsapp', '-100123')).toBeUndefined();
    expect(store.groups.get('nobody')).toBeUndefined();
  });

  it('gives the admin group the gateway network by default, like every group, and keeps an explicit mode', () => {
    expect(
      store.groups.add({ id: 'main', channel: 'local', chatId: 'main', name: 'Admin', isAdmin: true }),
    ).toMatchObject({ isAdmin: true, networkMode: 'gateway' });
    expect(store.groups.add({ ...family, networkMode: 'full' }).networkMode).toBe('full');
  });

  it('refuses a second group with the same id or the same chat', () => {
    store.groups.add(family);
    expect(() => store.groups.add({ ...family, chatId: 'other-chat' })).toThrow(GroupExistsError);
    expect(() => store.groups.add({ ...family, id: 'family2' })).toThrow(GroupExistsError);
    expect(() => store.groups.add({ ...family, id: 'family2' })).toThrow(/telegram:-100123 already exists/);
    // The same chat id on another channel is another chat.
    store.groups.add({ ...family, id: 'family-wa', channel: 'whatsapp' });
    expect(store.groups.list().map((g) => g.id)).toEqual(['family', 'family-wa']);
  });

  it.each(['', 'Family', '../etc', 'a/b', '-lead', '_lead', 'has space', 'a.b', 'x'.repeat(65), 'ünï'])(
    'refuses the id %j, which could not safely name a folder',
    (id) => {
      let err: unknown;
      try {
        store.groups.add({ ...family, id });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(GroupExistsError);
      expect((err as Error).message).toMatch(/is not valid/);
      expect(store.groups.list()).toEqual([]);
    },
  );

  it.each(['a', '0', 'family_2', 'work-team', 'x'.repeat(64)])('accepts the id %j', (id) => {
    expect(store.groups.add({ ...family, id }).id).toBe(id);
  });

  it('lists groups sorted by id', () => {
    for (const id of ['zeta', 'alpha', 'mid']) store.groups.add({ ...family, id, chatId: id });
    expect(store.groups.list().map((g) => g.id)).toEqual(['alpha', 'mid', 'zeta']);
  });

  it('removes a group, reports whether there was one, and drops its messages', () => {
    store.groups.add(family);
    store.messages.insert({
      groupId: 'family',
      channel: 'telegram',
      chatId: '-100123',
      externalId: 'm1',
      senderId: 'u1',
      senderName: 'Ann',
      text: 'hello',
      sentAt: NOW.toISOString(),
      triggers: false,
    });
    expect(store.groups.remove('family')).toBe(true);
    expect(store.groups.remove('family')).toBe(false);
    expect(store.groups.get('family')).toBeUndefined();
    expect(store.messages.after('family', 0)).toEqual([]);
  });

  it('moves the agent cursor only forward', () => {
    store.groups.add(family);
    store.groups.advanceCursor('family', 10);
    expect(store.groups.get('family')?.agentCursor).toBe(10);
    store.groups.advanceCursor('family', 5);
    expect(store.groups.get('family')?.agentCursor).toBe(10);
    store.groups.advanceCursor('family', 11);
    expect(store.groups.get('family')?.agentCursor).toBe(11);
    // An unknown group is not created by advancing its cursor.
    store.groups.advanceCursor('ghost', 3);
    expect(store.groups.get('ghost')).toBeUndefined();
  });
});
