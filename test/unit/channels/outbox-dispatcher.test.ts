import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxItem } from '../../../host/store/outbox-store.ts';
import { createOutboxDispatcher } from '../../../host/channels/outbox-dispatcher.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { createDeliveryOutcomes } from '../../../host/channels/delivery-outcomes.ts';
import { fakeClock, type FakeClock } from '../../helpers/fake-clock.ts';
import { waitFor } from '../../helpers/processes.ts';
import { createRecordingChannel, type RecordingChannel } from '../../helpers/router-harness.ts';

const dirs: string[] = [];
const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function setup(dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-outbox-')), clock?: FakeClock) {
  if (!dirs.includes(dir)) dirs.push(dir);
  const store = openStore({
    file: path.join(dir, 'carapace.db'),
    ...(clock ? { now: () => new Date(clock.now()) } : {}),
  });
  stores.push(store);
  return { dir, store };
}

function dispatcherFor(
  store: Store,
  channel: RecordingChannel | undefined,
  opts: { retryBaseMs?: number; maxConnectionDrops?: number; clock?: FakeClock } = {},
) {
  const delivered: OutboxItem[] = [];
  const notices: { key: string; text: string }[] = [];
  let notify: (() => void) | undefined;
  const logger = pino({ level: 'silent' });
  const outcomes = createDeliveryOutcomes({
    store,
    notifyOwner: (key, text) => {
      if (!notices.some((n) => n.key === key)) notices.push({ key, text });
    },
    logger,
  });
  const d = createOutboxDispatcher({
    outbox: store.outbox,
    channelFor: (n) => (channel && n === channel.name ? channel : undefined),
    retryBaseMs: opts.retryBaseMs ?? 5,
    retryMaxMs: Math.max(40, opts.retryBaseMs ?? 0),
    ...(opts.maxConnectionDrops ? { maxConnectionDrops: opts.maxConnectionDrops } : {}),
    onDelivered: (item) => {
      delivered.push(item);
      notify?.();
    },
    onDeadLetter: (item, reason, cause) => {
      outcomes.onDeadLetter(item, reason, cause);
      delivered.push(item);
      notify?.();
    },
    onChatMoved: outcomes.onChatMoved,
    logger,
    ...(opts.clock ? { clock: opts.clock.clock } : {}),
  });
  const until = (n: number) =>
    new Promise<void>((resolve) => {
      notify = () => delivered.length >= n && resolve();
      notify();
    });
  return { d, delivered, until, notices };
}

const item = (key: string, chatId = 'c1', text = key) => ({
  idempotencyKey: key,
  groupId: 'g',
  channel: 'test',
  chatId,
  runId: null,
  text,
});

describe('outbox dispatcher', () => {
  it('retries after channel errors and delivers in order per chat', async () => {
    const { store } = setup();
    const channel = createRecordingChannel();
    channel.failNext(2);
    const { d, until } = dispatcherFor(store, channel);
    d.enqueue(item('a'));
    d.enqueue(item('b'));
    d.enqueue(item('x', 'c2'));
    await until(3);
    expect(channel.sent.filter((s) => s.chatId === 'c1').map((s) => s.key)).toEqual(['a', 'b']);
    expect(store.outbox.pendingCount()).toBe(0);
    await d.stop();
  });

  it('stores a key once, so a replayed enqueue never sends twice', async () => {
    const { store } = setup();
    const channel = createRecordingChannel();
    const { d, until } = dispatcherFor(store, channel);
    d.enqueue(item('same'));
    d.enqueue(item('same'));
    await until(1);
    d.enqueue(item('same'));
    // A later reply to the same chat is the sentinel: a second send of `same` would have come before it.
    d.enqueue(item('sentinel'));
    await until(2);
    expect(channel.sent.map((s) => s.key)).toEqual(['same', 'sentinel']);
    await d.stop();
  });

  it('retries on the clock it is given: nothing goes out again until that clock passes the backoff', async () => {
    const clock = fakeClock(Date.parse('2026-01-01T00:00:00Z'));
    const { store } = setup(undefined, clock);
    const channel = createRecordingChannel();
    channel.failNext(1);
    const { d, until } = dispatcherFor(store, channel, { retryBaseMs: 1_000, clock });
    d.enqueue(item('a'));
    const [retry] = await waitFor('the retry timer', () => clock.live().length === 1 && clock.live());
    expect(retry?.ms).toBe(1_000);
    expect(channel.sent).toEqual([]);
    clock.advance(1_000);
    await until(1);
    expect(channel.sent.map((s) => s.key)).toEqual(['a']);
    expect(clock.live()).toEqual([]);
    await d.stop();
  });

  it('delivers after a restart what an earlier process stored but never sent', async () => {
    const { dir, store } = setup();
    const down = createRecordingChannel();
    down.failNext(100); // the platform does not answer: nothing can be delivered
    const first = dispatcherFor(store, down);
    first.d.enqueue(item('r1'));
    first.d.enqueue(item('r2'));
    await waitFor('the first attempt to fail', () => store.outbox.failing().length > 0);
    await first.d.stop();
    expect(store.outbox.pendingCount()).toBe(2);
    const errors = store.db.prepare('SELECT last_error AS e FROM outbox ORDER BY id').all() as {
      e: string;
    }[];
    expect(errors[0]?.e).toMatch(/platform unavailable/);
    store.close();
    stores.splice(stores.indexOf(store), 1);

    const reopened = setup(dir).store;
    const channel = createRecordingChannel();
    const second = dispatcherFor(reopened, channel);
    // The rows wait for their backoff to pass; the dispatcher's own timer delivers them then.
    second.d.kick();
    await second.until(2);
    expect(channel.sent.map((s) => s.key)).toEqual(['r1', 'r2']);
    await second.d.stop();
  });

  it('splits a long reply at enqueue into ordered pieces within the limit, each with its own key', async () => {
    const { store } = setup();
    const channel = createRecordingChannel();
    const { d, until } = dispatcherFor(store, channel);
    const paragraphs = Array.from({ length: 12 }, (_, i) => `Paragraph ${i} ${'word '.repeat(120)}`.trim());
    d.enqueue(item('long', 'c1', paragraphs.join('\n\n')));
    const rows = store.db.prepare('SELECT idempotency_key AS k FROM outbox ORDER BY id').all() as {
      k: string;
    }[];
    expect(rows.length).toBeGreaterThan(1);
    await until(rows.length);
    expect(channel.sent.map((s) => s.key)).toEqual(rows.map((_, i) => `long#${i + 1}`));
    expect(channel.sent.every((s) => s.text.length <= channel.textLimit)).toBe(true);
    expect(channel.sent.map((s) => s.text).join('\n\n')).toBe(paragraphs.join('\n\n'));
    // Replayed with the same key (a retried run), nothing new is stored.
    d.enqueue(item('long', 'c1', paragraphs.join('\n\n')));
    expect(store.outbox.pendingCount()).toBe(0);
    await d.stop();
  });

  it('stores the platform ids of a delivered piece and answers isOwnMessage from them', async () => {
    const { store } = setup();
    const channel = createRecordingChannel();
    const { d, until } = dispatcherFor(store, channel);
    d.enqueue(item('hello'));
    await until(1);
    const [pid] = channel.sent[0]?.platformIds ?? [];
    expect(store.outbox.isOwnMessage('test', 'c1', pid ?? '')).toBe(true);
    expect(store.outbox.isOwnMessage('test', 'c2', pid ?? '')).toBe(false);
    expect(store.outbox.isOwnMessage('test', 'c1', 'someone-elses')).toBe(false);
    await d.stop();
  });

  it('dead-letters a dead chat, tells the owner once, and keeps other chats flowing', async () => {
    const { store } = setup();
    const channel = createRecordingChannel();
    channel.answerNext({ kind: 'permanent', reason: 'bot was removed from the group' }, 'gone');
    channel.answerNext({ kind: 'permanent', reason: 'bot was removed from the group' }, 'gone');
    const { d, until, notices } = dispatcherFor(store, channel);
    d.enqueue(item('dead-1', 'gone'));
    d.enqueue(item('dead-2', 'gone'));
    d.enqueue(item('alive', 'c2'));
    await until(3);
    expect(channel.sent.map((s) => s.key)).toEqual(['alive']);
    const rows = store.db
      .prepare('SELECT idempotency_key AS k, status, last_error AS e FROM outbox ORDER BY id')
      .all();
    expect(rows).toEqual([
      { k: 'dead-1', status: 'dead', e: 'bot was removed from the group' },
      { k: 'dead-2', status: 'dead', e: 'bot was removed from the group' },
      { k: 'alive', status: 'sent', e: null },
    ]);
    expect(notices).toHaveLength(1);
    expect(notices[0]?.text).toMatch(/test chat gone cannot be delivered: bot was removed/);
    expect(store.outbox.deadLetters().map((r) => r.idempotencyKey)).toEqual(['dead-2', 'dead-1']);
    // Never retried: a later reply to that chat goes out alone (a retried dead piece would precede it).
    d.enqueue(item('sentinel', 'gone'));
    await until(4);
    expect(channel.sent.map((s) => s.key)).toEqual(['alive', 'sentinel']);
    await d.stop();
  });

  it('dead-letters a piece whose sends keep taking the connection down, tells the owner once with its first words, and the chat goes on', async () => {
    const { store } = setup();
    store.groups.add({ id: 'g', channel: 'test', chatId: 'c1', name: 'Family', isAdmin: false });
    const channel = createRecordingChannel();
    const drop = { kind: 'connection-lost', reason: 'closed during the send (1002)' } as const;
    for (let i = 0; i < 3; i += 1) channel.answerNext(drop, 'c1');
    const { d, until, notices } = dispatcherFor(store, channel, { maxConnectionDrops: 3 });
    const poison = 'This particular reply makes the server hang up on us, every single time it is sent.';
    d.enqueue(item('poison', 'c1', poison));
    d.enqueue(item('after', 'c1'));
    d.enqueue(item('other', 'c2'));
    await until(3);
    expect(channel.sent.map((s) => s.key).sort()).toEqual(['after', 'other']);
    const row = store.db
      .prepare(
        "SELECT status, attempts, connection_drops AS drops, last_error AS e FROM outbox WHERE idempotency_key = 'poison'",
      )
      .get();
    expect(row).toEqual({
      status: 'dead',
      attempts: 3,
      drops: 3,
      e: 'sending it took the test connection down 3 times (last: closed during the send (1002))',
    });
    expect(notices).toHaveLength(1);
    expect(notices[0]?.key).toMatch(/^poison-piece:/);
    expect(notices[0]?.text).toMatch(/A reply to group "g" \(test chat c1\) was not sent: sending it took/);
    expect(notices[0]?.text).toContain('It began "This particular reply makes the server hang up…"');
    // Dead for good: it is never sent again, so it never takes the connection down again (a later reply
    // to its chat goes out alone).
    d.enqueue(item('sentinel', 'c1'));
    await until(4);
    expect(channel.sent.map((s) => s.key).sort()).toEqual(['after', 'other', 'sentinel']);
    await d.stop();
  });

  it('names the failing piece, its drops and the last reason while it waits for its next attempt', async () => {
    const { store } = setup();
    const channel = createRecordingChannel();
    channel.answerNext({ kind: 'connection-lost', reason: 'closed during the send (1002)' }, 'c1');
    const { d } = dispatcherFor(store, channel, { retryBaseMs: 60_000 });
    d.enqueue(item('poison', 'c1', 'the reply that hurts'));
    const [failing] = await waitFor(
      'the piece failing',
      () => store.outbox.failing().length > 0 && store.outbox.failing(),
    );
    expect(failing).toMatchObject({
      idempotencyKey: 'poison',
      attempts: 1,
      connectionDrops: 1,
      lastError:
        'sending it took the test connection down (1 of 3 before it is dead-lettered): closed during the send (1002)',
    });
    await d.stop();
  });

  it('dead-letters at once a reply for a channel that is not configured', async () => {
    const { store } = setup();
    const { d, until, notices } = dispatcherFor(store, undefined);
    d.enqueue(item('nowhere'));
    await until(1);
    expect(store.outbox.deadLetters()[0]?.lastError).toBe('there is no channel "test" configured');
    expect(notices).toHaveLength(1);
    await d.stop();
  });

  it('re-binds a moved chat in one audited step and delivers there, now and next time', async () => {
    const { store } = setup();
    store.groups.add({ id: 'g', channel: 'test', chatId: '-100', name: 'g', isAdmin: false });
    const channel = createRecordingChannel();
    channel.answerNext({ kind: 'moved', newChatId: '-100200', reason: 'group upgraded to a supergroup' });
    const { d, until } = dispatcherFor(store, channel);
    d.enqueue(item('m1', '-100'));
    d.enqueue(item('m2', '-100'));
    await until(2);
    expect(channel.sent.map((s) => [s.key, s.chatId])).toEqual([
      ['m1', '-100200'],
      ['m2', '-100200'],
    ]);
    expect(store.groups.get('g')?.chatId).toBe('-100200');
    const audit = store.audit.tail(5).filter((r) => r.operation === 'channel.chat_moved');
    expect(audit).toHaveLength(1);
    expect(JSON.parse(audit[0]?.details ?? '{}')).toMatchObject({ from: '-100', to: '-100200' });
    await d.stop();
  });
});
