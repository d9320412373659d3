import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMemoryBackfill, nextWaitMs } from '../../../host/memory/memory-backfill.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
const logger = { info: () => undefined, error: () => undefined };
let store: Store;
let seq = 0;
afterEach(() => store.close());

function say(text: string): number {
  seq += 1;
  const id = store.messages.insert({
    groupId: 'family',
    channel: 'local',
    chatId: 'family',
    externalId: `m${seq}`,
    senderId: 'ann',
    senderName: 'Ann',
    text,
    sentAt: new Date(Date.UTC(2026, 0, 1) + seq * 60_000).toISOString(),
    triggers: false,
  });
  if (id === undefined) throw new Error('expected the message to be stored');
  return id;
}

const isIndexed = (id: number) =>
  store.db.prepare('SELECT 1 FROM memory_fts WHERE rowid = ?').get(id) !== undefined;

describe('the host’s memory indexer', () => {
  it('takes in the history, then what comes in while it runs, and resumes after a stop', async () => {
    store = openStore({ file: path.join(tempDir(), 'carapace.db') });
    store.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
    const time = fakeClock(Date.UTC(2026, 0, 1));
    const { clock } = time;
    const history = Array.from({ length: 25 }, (_, i) => say(`history ${i}`));
    const indexer = createMemoryBackfill({
      memory: store.memory,
      batchSize: 10,
      intervalMs: 2000,
      clock,
      logger,
    });
    const caughtUp = await indexer.start();
    expect(caughtUp.done).toBe(true);
    expect(history.every(isIndexed)).toBe(true);

    const later = say('said while the host runs');
    expect(isIndexed(later)).toBe(false);
    time.advance(2000);
    await vi.waitFor(() => expect(isIndexed(later)).toBe(true));
    await indexer.stop();

    const afterStop = say('said while the host was stopped');
    expect(isIndexed(afterStop)).toBe(false);
    // Found all the same, read directly while it waits.
    expect(store.memory.search('family', { text: 'stopped' }).map((h) => h.id)).toEqual([afterStop]);
    const next = createMemoryBackfill({ memory: store.memory, intervalMs: 2000, clock, logger });
    void next.start();
    await vi.waitFor(() => expect(isIndexed(afterStop)).toBe(true));
    await next.stop();
    expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
  });

  it('takes a burst in fewer, larger steps, found all along, and is back to its interval after it', async () => {
    store = openStore({ file: path.join(tempDir(), 'carapace.db') });
    store.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
    const time = fakeClock(Date.UTC(2026, 0, 1));
    // The real store, each step's size noted.
    const steps: number[] = [];
    const memory = {
      backfillProgress: () => store.memory.backfillProgress(),
      backfillStep: (limit?: number) => {
        const from = store.memory.backfillProgress().nextId;
        const p = store.memory.backfillStep(limit);
        steps.push(p.nextId - from);
        return p;
      },
    };
    const indexer = createMemoryBackfill({
      memory,
      intervalMs: 2000,
      maxIntervalMs: 16_000,
      clock: time.clock,
      logger,
    });
    await indexer.start();
    steps.length = 0;
    const asleep = () => vi.waitFor(() => expect(time.live()).toHaveLength(1));

    // 40 s of 50 messages a second: at the quiet interval, 20 steps of 100.
    const burst: number[] = [];
    for (let s = 0; s < 40; s += 1) {
      await asleep();
      for (let k = 0; k < 50; k += 1) burst.push(say(`burst ${s}x${k}`));
      // Whatever waits is found meanwhile, its newest first.
      expect(store.memory.search('family', { text: `${s}x49` }).map((h) => h.id)).toEqual([burst.at(-1)]);
      time.advance(1000);
    }
    expect(steps).toEqual([100, 200, 400, 800]);
    expect(isIndexed(burst[1499] as number)).toBe(true);
    expect(isIndexed(burst[1500] as number)).toBe(false);

    // The rest of the burst at the next wake; then, with few coming in, every 2 s again.
    await asleep();
    time.advance(16_000);
    await vi.waitFor(() => expect(burst.every(isIndexed)).toBe(true));
    await asleep();
    time.advance(16_000);
    await asleep();
    const quiet = say('quiet again');
    time.advance(2000);
    await vi.waitFor(() => expect(isIndexed(quiet)).toBe(true));
    await indexer.stop();
    expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
  });

  it('doubles its sleep while wakes find a burst, up to the most, and is back at once when they do not', () => {
    expect(nextWaitMs(99, 2000, 2000, 16_000)).toBe(2000);
    expect(nextWaitMs(100, 2000, 2000, 16_000)).toBe(4000);
    expect(nextWaitMs(5000, 8000, 2000, 16_000)).toBe(16_000);
    expect(nextWaitMs(5000, 16_000, 2000, 16_000)).toBe(16_000);
    expect(nextWaitMs(3, 16_000, 2000, 16_000)).toBe(2000);
  });
});
