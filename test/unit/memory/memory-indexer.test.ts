import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMemoryBackfill } from '../../../host/memory/memory-backfill.ts';
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
});
