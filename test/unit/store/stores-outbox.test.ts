import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewOutboxItem } from '../../../host/store/outbox-store.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
const T0 = Date.parse('2025-03-01T12:00:00.000Z');
let clock: number;
let store: Store;

beforeEach(() => {
  clock = T0;
  store = openStore({ file: path.join(tempDir(), 'carapace.db'), now: () => new Date(clock) });
});
afterEach(() => store.close());

function reply(key: string, fields: Partial<NewOutboxItem> = {}): NewOutboxItem {
  return {
    idempotencyKey: key,
    groupId: 'family',
    channel: 'local',
    chatId: 'family',
    runId: 1,
    text: `reply ${key}`,
    ...fields,
  };
}

function add(item: NewOutboxItem): number {
  expect(store.outbox.add(item)).toBe(true);
  return store.outbox.highWater(item.channel, item.chatId);
}

describe('outbox store', () => {
  it('adds a reply as pending and due now', () => {
    const id = add(reply('r1'));
    expect(store.outbox.due()).toEqual([
      {
        id,
        idempotencyKey: 'r1',
        sendKey: expect.stringMatching(/^[0-9a-f]{64}$/),
        groupId: 'family',
        channel: 'local',
        chatId: 'family',
        runId: 1,
        text: 'reply r1',
        status: 'pending',
        attempts: 0,
        connectionDrops: 0,
        nextAttemptAt: T0,
        lastError: null,
      },
    ]);
    expect(store.outbox.nextDueAt()).toBe(T0);
  });

  it('ignores a second reply with the same idempotency key', () => {
    add(reply('r1'));
    expect(store.outbox.add(reply('r1', { text: 'a retried run sent this again' }))).toBe(false);
    expect(store.outbox.due().map((i) => i.text)).toEqual(['reply r1']);
    expect(store.outbox.pendingCount()).toBe(1);
  });

  it('due() returns pending replies in id order, up to the limit', () => {
    const ids = ['a', 'b', 'c'].map((k) => add(reply(k)));
    expect(store.outbox.due().map((i) => i.id)).toEqual(ids);
    expect(store.outbox.due(2).map((i) => i.id)).toEqual(ids.slice(0, 2));
  });

  it('markFailed() counts the attempt, keeps the error and holds the reply until the retry time', () => {
    const id = add(reply('r1'));
    const other = add(reply('w1', { groupId: 'work', chatId: 'work' }));
    store.outbox.markFailed(id, 'network down', T0 + 5_000);
    expect(store.outbox.due().map((i) => i.id)).toEqual([other]);
    store.outbox.markSent(other);
    expect(store.outbox.nextDueAt()).toBe(T0 + 5_000);

    clock = T0 + 4_999;
    expect(store.outbox.due()).toEqual([]);
    clock = T0 + 5_000;
    expect(store.outbox.due()).toMatchObject([
      { id, attempts: 1, lastError: 'network down', nextAttemptAt: T0 + 5_000 },
    ]);

    store.outbox.markFailed(id, 'x'.repeat(2_000), T0 + 20_000);
    clock = T0 + 20_000;
    const [item] = store.outbox.due();
    expect(item?.attempts).toBe(2);
    expect(item?.lastError).toHaveLength(500);
  });

  it('holds newer replies of a chat back while an older one waits for its retry, so none overtakes', () => {
    const first = add(reply('f1'));
    const second = add(reply('f2'));
    const elsewhere = add(reply('w1', { groupId: 'work', chatId: 'work' }));
    store.outbox.markFailed(first, 'timeout', T0 + 5_000);
    expect(store.outbox.due().map((i) => i.id)).toEqual([elsewhere]);
    clock = T0 + 5_000;
    expect(store.outbox.due().map((i) => i.id)).toEqual([first, second, elsewhere]);
    // Once the older one is delivered, the newer one no longer waits for anything.
    store.outbox.markFailed(first, 'timeout', T0 + 60_000);
    expect(store.outbox.due().map((i) => i.id)).toEqual([elsewhere]);
    store.outbox.markSent(first);
    expect(store.outbox.due().map((i) => i.id)).toEqual([second, elsewhere]);
  });

  it('nextDueAt() agrees with due(): a reply held back by an older one is not due before that one', () => {
    // Otherwise a dispatcher that sleeps until nextDueAt() wakes at once, finds nothing due, and spins.
    const first = add(reply('f1'));
    add(reply('f2'));
    store.outbox.markFailed(first, 'timeout', T0 + 5_000);
    clock = T0 + 1_000;
    expect(store.outbox.due()).toEqual([]);
    expect(store.outbox.nextDueAt()).toBe(T0 + 5_000);
    const elsewhere = add(reply('w1', { groupId: 'work', chatId: 'work' }));
    expect(store.outbox.nextDueAt()).toBe(T0 + 1_000);
    store.outbox.markSent(elsewhere);
    expect(store.outbox.nextDueAt()).toBe(T0 + 5_000);
  });

  it('nextDueAt() is the earliest pending retry over all chats, undefined when nothing is pending', () => {
    expect(store.outbox.nextDueAt()).toBeUndefined();
    const a = add(reply('a'));
    const b = add(reply('b', { groupId: 'work', chatId: 'work' }));
    store.outbox.markFailed(a, 'e', T0 + 9_000);
    store.outbox.markFailed(b, 'e', T0 + 3_000);
    expect(store.outbox.nextDueAt()).toBe(T0 + 3_000);
    store.outbox.markSent(b);
    expect(store.outbox.nextDueAt()).toBe(T0 + 9_000);
    store.outbox.markSent(a);
    expect(store.outbox.nextDueAt()).toBeUndefined();
  });

  it('markSent() takes a reply out of the queue for good', () => {
    const id = add(reply('r1'));
    store.outbox.markSent(id);
    expect(store.outbox.due()).toEqual([]);
    expect(store.outbox.pendingCount()).toBe(0);
    // A late failure report for a reply already delivered changes nothing.
    store.outbox.markFailed(id, 'late', T0);
    expect(store.outbox.due()).toEqual([]);
    expect(store.outbox.sentAfter('local', 'family', 0)).toMatchObject([
      { id, status: 'sent', attempts: 1, lastError: null },
    ]);
  });

  it('counts pending replies per chat and in all', () => {
    const f1 = add(reply('f1'));
    add(reply('f2'));
    add(reply('w1', { groupId: 'work', chatId: 'work' }));
    add(reply('t1', { channel: 'telegram', chatId: 'family' }));
    expect(store.outbox.pendingCount()).toBe(4);
    expect(store.outbox.pendingCount('local', 'family')).toBe(2);
    expect(store.outbox.pendingCount('local', 'work')).toBe(1);
    expect(store.outbox.pendingCount('telegram', 'family')).toBe(1);
    expect(store.outbox.pendingCount('local', 'nobody')).toBe(0);
    store.outbox.markSent(f1);
    expect(store.outbox.pendingCount('local', 'family')).toBe(1);
    expect(store.outbox.pendingCount()).toBe(3);
  });

  it('sentAfter() returns only sent replies of that chat past the given id', () => {
    const a = add(reply('a'));
    const b = add(reply('b'));
    const w = add(reply('w', { chatId: 'work' }));
    const c = add(reply('c'));
    for (const id of [a, w, c]) store.outbox.markSent(id);
    expect(store.outbox.sentAfter('local', 'family', 0).map((i) => i.id)).toEqual([a, c]);
    expect(store.outbox.sentAfter('local', 'family', a).map((i) => i.id)).toEqual([c]);
    expect(store.outbox.sentAfter('local', 'family', c)).toEqual([]);
    store.outbox.markSent(b);
    expect(store.outbox.sentAfter('local', 'family', a).map((i) => i.id)).toEqual([b, c]);
  });

  it('highWater() is the newest reply id of the chat, sent or not, and 0 without any', () => {
    expect(store.outbox.highWater('local', 'family')).toBe(0);
    const a = add(reply('a'));
    const w = add(reply('w', { chatId: 'work' }));
    expect(store.outbox.highWater('local', 'family')).toBe(a);
    expect(store.outbox.highWater('local', 'work')).toBe(w);
    store.outbox.markSent(a);
    expect(store.outbox.highWater('local', 'family')).toBe(a);
  });

  it('deliveredWithActions() finds a notice with buttons in every chat it reached, by its last message', () => {
    const actions = [{ label: 'Approve', command: 'approve abc234' }];
    const sent = (key: string, fields: Partial<NewOutboxItem>, platformIds: string[]) => {
      const id = add(reply(key, fields));
      store.outbox.markSent(id, {
        channel: fields.channel ?? 'local',
        chatId: fields.chatId ?? 'family',
        platformIds,
      });
    };
    sent('approval:abc234', { actions }, ['c1']);
    sent('approval:abc234@telegram:5150#1', { channel: 'telegram', chatId: '5150' }, ['7']);
    sent('approval:abc234@telegram:5150#2', { channel: 'telegram', chatId: '5150', actions }, ['8', '9']);
    sent('approval:abc234-refused', { actions }, ['c2']);
    sent('approval:abc2345', { actions }, ['c3']);
    add(reply('approval:abc234@whatsapp:1@s.whatsapp.net', { channel: 'whatsapp', actions }));
    expect(store.outbox.deliveredWithActions('approval:abc234')).toEqual([
      { channel: 'local', chatId: 'family', platformId: 'c1' },
      { channel: 'telegram', chatId: '5150', platformId: '9' },
    ]);
  });
});
