import fs from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../host/store/store.ts';
import { startWalCheckpoints, type WalCheckpoints } from '../../../host/store/wal-checkpoints.ts';
import { fakeClock, type FakeClock } from '../../helpers/fake-clock.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
const silent = pino({ level: 'silent' });

describe('WAL checkpoints off the message path', () => {
  let store: Store;
  let time: FakeClock;
  let checkpoints: WalCheckpoints | undefined;
  let file: string;
  let sent = 0;

  beforeEach(() => {
    file = path.join(tempDir(), 'carapace.db');
    store = openStore({ file, scheduledCheckpoints: true });
    store.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
    time = fakeClock(Date.parse('2026-01-01T00:00:00Z'));
  });
  afterEach(() => {
    checkpoints?.stop();
    store.close();
  });

  /** Writes messages through the store, as ingest does: each commit appends to the WAL. */
  const write = (count: number) => {
    for (let i = 0; i < count; i++) {
      sent += 1;
      store.messages.insert({
        groupId: 'family',
        channel: 'local',
        chatId: 'family',
        externalId: `m-${sent}`,
        senderId: 'alice',
        senderName: 'Alice',
        text: `message ${sent} `.repeat(40),
        sentAt: new Date(time.now()).toISOString(),
        triggers: false,
      });
    }
  };
  const walBytes = () => fs.statSync(`${file}-wal`).size;
  /** The last checkpoint copied every frame the WAL held back into the database. */
  const copiedAll = (c: WalCheckpoints) => {
    const last = c.last();
    expect(last?.log).toBeGreaterThan(0);
    expect(last?.checkpointed).toBe(last?.log);
  };

  it('never checkpoints inside a commit: the WAL only grows while the host writes', () => {
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    write(400);
    // SQLite's default (1,000 pages, 4 MiB) would have checkpointed and rewound the WAL by now.
    expect(walBytes()).toBeGreaterThan(4 * 1024 * 1024);
  });

  it('checkpoints once the WAL stopped changing for a tick, and not while every tick brings writes', () => {
    checkpoints = startWalCheckpoints({ db: store.db, clock: time.clock, logger: silent, intervalMs: 1000 });
    for (let tick = 0; tick < 5; tick++) {
      write(20);
      time.advance(1000);
    }
    expect(checkpoints.counts).toEqual({ idle: 0, bound: 0 });
    // A quiet tick: the first one only sees the last change, the next one finds it unchanged.
    time.advance(2000);
    expect(checkpoints.counts).toEqual({ idle: 1, bound: 0 });
    time.advance(5000);
    expect(checkpoints.counts).toEqual({ idle: 1, bound: 0 });
    copiedAll(checkpoints);
  });

  it('checkpoints past the size bound even while the host never rests, and the WAL then starts over', () => {
    checkpoints = startWalCheckpoints({
      db: store.db,
      clock: time.clock,
      logger: silent,
      intervalMs: 1000,
      maxWalBytes: 1024 * 1024,
    });
    for (let tick = 0; tick < 10; tick++) {
      write(40);
      time.advance(1000);
    }
    expect(checkpoints.counts.idle).toBe(0);
    expect(checkpoints.counts.bound).toBeGreaterThanOrEqual(2);
    // Rewound after each: it never held much more than the bound plus one tick of writes.
    expect(walBytes()).toBeLessThan(3 * 1024 * 1024);
  });

  it('copies what is left when the host stops', () => {
    checkpoints = startWalCheckpoints({ db: store.db, clock: time.clock, logger: silent });
    write(50);
    checkpoints.stop();
    copiedAll(checkpoints);
    expect(checkpoints.counts).toEqual({ idle: 0, bound: 0 });
    expect(time.live()).toEqual([]);
    checkpoints = undefined;
  });
});
