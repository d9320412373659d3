import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../host/store/store.ts';
import {
  startWalCheckpoints,
  WORKER_NICE,
  type WalCheckpoints,
} from '../../../host/store/wal-checkpoints.ts';
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
  afterEach(async () => {
    await checkpoints?.stop();
    checkpoints = undefined;
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

  it('checkpoints in a worker on every tick that brought writes, so a host that never rests keeps a small WAL', async () => {
    checkpoints = startWalCheckpoints({ db: store.db, clock: time.clock, logger: silent, intervalMs: 1000 });
    for (let tick = 0; tick < 10; tick++) {
      write(40);
      time.advance(1000);
      await checkpoints.settled();
    }
    expect(checkpoints.counts).toEqual({ checkpoints: 10, overBound: 0 });
    copiedAll(checkpoints);
    // Rewound after each: it never held much more than one tick of writes (40 messages, about 1 MiB).
    expect(walBytes()).toBeLessThan(3 * 1024 * 1024);
    // An unchanged WAL is left alone.
    time.advance(5000);
    await checkpoints.settled();
    expect(checkpoints.counts.checkpoints).toBe(10);
  });

  /** The nice value of each of this process's threads (Linux: field 19 of /proc/self/task/<tid>/stat). */
  const threadNices = () =>
    fs.readdirSync('/proc/self/task').map((tid) => {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    });

  it.runIf(process.platform === 'linux')(
    "runs the copy at a lower priority than the host's event loop, which keeps its own",
    async () => {
      const own = os.getPriority();
      const before = threadNices().filter((n) => n === WORKER_NICE).length;
      checkpoints = startWalCheckpoints({
        db: store.db,
        clock: time.clock,
        logger: silent,
        intervalMs: 1000,
      });
      write(40);
      time.advance(1000);
      await checkpoints.settled();
      expect(checkpoints.counts.checkpoints).toBe(1);
      expect(threadNices().filter((n) => n === WORKER_NICE).length).toBe(before + 1);
      expect(os.getPriority()).toBe(own);
    },
  );

  it('the host connection keeps committing while the worker checkpoints', async () => {
    checkpoints = startWalCheckpoints({ db: store.db, clock: time.clock, logger: silent, intervalMs: 1000 });
    write(200);
    time.advance(1000);
    write(50);
    await checkpoints.settled();
    expect(store.db.prepare('SELECT count(*) AS n FROM messages').get()).toEqual({ n: 250 });
  });

  it('says when the WAL is past its bound', async () => {
    const warnings: string[] = [];
    const logger = { ...silent, warn: (_: unknown, msg: string) => void warnings.push(msg), debug: () => {} };
    // A reader holding a snapshot keeps the checkpoint from copying past it, as a long backup would.
    const reader = openStore({ file });
    reader.db.exec('BEGIN');
    reader.db.prepare('SELECT count(*) FROM messages').get();
    try {
      checkpoints = startWalCheckpoints({
        db: store.db,
        clock: time.clock,
        logger,
        intervalMs: 1000,
        maxWalBytes: 1024 * 1024,
      });
      for (let tick = 0; tick < 4; tick++) {
        write(40);
        time.advance(1000);
        await checkpoints.settled();
      }
      expect(checkpoints.counts.overBound).toBeGreaterThanOrEqual(1);
      expect(warnings.some((w) => w.includes('past its bound'))).toBe(true);
    } finally {
      reader.db.exec('COMMIT');
      reader.close();
    }
  });

  it('copies what is left when the host stops', async () => {
    checkpoints = startWalCheckpoints({ db: store.db, clock: time.clock, logger: silent });
    write(50);
    await checkpoints.stop();
    copiedAll(checkpoints);
    expect(checkpoints.counts).toEqual({ checkpoints: 0, overBound: 0 });
    expect(time.live()).toEqual([]);
    checkpoints = undefined;
  });
});
