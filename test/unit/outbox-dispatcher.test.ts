import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxItem } from '../../host/store/outbox-store.ts';
import { createOutboxDispatcher } from '../../host/channels/outbox-dispatcher.ts';
import { openStore, type Store } from '../../host/store/store.ts';
import { createRecordingChannel, type RecordingChannel } from '../helpers/router-harness.ts';

const dirs: string[] = [];
const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function setup(dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-outbox-'))) {
  if (!dirs.includes(dir)) dirs.push(dir);
  const store = openStore({ file: path.join(dir, 'carapace.db') });
  stores.push(store);
  return { dir, store };
}

function dispatcherFor(store: Store, channel: RecordingChannel | undefined) {
  const delivered: OutboxItem[] = [];
  let notify: (() => void) | undefined;
  const d = createOutboxDispatcher({
    outbox: store.outbox,
    channelFor: (n) => (channel && n === channel.name ? channel : undefined),
    retryBaseMs: 5,
    retryMaxMs: 40,
    onDelivered: (item) => {
      delivered.push(item);
      notify?.();
    },
    logger: pino({ level: 'silent' }),
  });
  const until = (n: number) =>
    new Promise<void>((resolve) => {
      notify = () => delivered.length >= n && resolve();
      notify();
    });
  return { d, delivered, until };
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
    d.kick();
    await new Promise((r) => setTimeout(r, 30));
    expect(channel.sent.map((s) => s.key)).toEqual(['same']);
    await d.stop();
  });

  it('delivers after a restart what an earlier process stored but never sent', async () => {
    const { dir, store } = setup();
    const first = dispatcherFor(store, undefined); // the channel is down: nothing can be delivered
    first.d.enqueue(item('r1'));
    first.d.enqueue(item('r2'));
    await new Promise((r) => setTimeout(r, 20));
    await first.d.stop();
    expect(store.outbox.pendingCount()).toBe(2);
    const errors = store.db.prepare('SELECT last_error AS e FROM outbox ORDER BY id').all() as {
      e: string;
    }[];
    expect(errors[0]?.e).toMatch(/channel "test" is not connected/);
    store.close();
    stores.splice(stores.indexOf(store), 1);

    const reopened = setup(dir).store;
    const channel = createRecordingChannel();
    const second = dispatcherFor(reopened, channel);
    second.d.kick();
    await new Promise((r) => setTimeout(r, 60)); // the rows wait for their backoff to pass
    await second.until(2);
    expect(channel.sent.map((s) => s.key)).toEqual(['r1', 'r2']);
    await second.d.stop();
  });
});
