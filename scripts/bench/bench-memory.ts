/**
 * Memory search and its cost (issue 37): on the scale bench's seeded history (test/helpers/seed-history.ts,
 * 1,000 groups × 50 messages a day), search p50/p99 for words as common as the seed has and as rare, each
 * query in one random group; ingest CPU per message with the index vs without it, alternating in the same run
 * on copies of the same database; and the database's growth from the index (dbstat).
 *
 * With the index, ingest stores each message in its own transaction as the host does, and the indexer takes
 * the waiting ones in as one step every `every` messages (were a step every 2 s, 10 messages would be 5 a
 * second, 100 would be 50 a second), or as the host's indexer does (its quiet interval, its sleep doubling
 * while wakes find 100 or more, `nextWaitMs`, on a simulated clock) during a burst of 50 a second and at a
 * steady 5 a second; its CPU is counted with ingest's, what still waits at the end included.
 *
 * Each side's store is opened once and stays open for the whole measured ingest, as the host keeps one
 * connection for its life. Until issue 37's last round each 500-message batch reopened its side's store, so
 * every indexer step read its pages cold (a fresh page cache, statements and the terms cut's group prefixes
 * made again): ~3-4 µs a message the host never pays. The reopening bought nothing the batches need: the
 * sides still alternate batch by batch in a rotating order, so someone else's load falls on each alike.
 * (Its close also checkpointed each batch's write-ahead log outside the measurement; now every automatic
 * checkpoint falls in a measured batch, as the host's checkpoints are its own CPU too.) The
 * host's indexer counts what waits since its last step, across batches (each batch counted from zero
 * before, so a wake early in a batch could end a burst's longer sleep).
 *
 * BENCH_MEMORY_DAYS (default 6, a fifth of the month like bench-history; 30 for the whole month) and
 * BENCH_MEMORY_GROUPS (default 1000) scale the seed. BENCH_MEMORY_SEED=<file> keeps the seeded database
 * there: seeded once if missing (for its days and groups; the month takes minutes), then each run works on
 * a copy, so runs before and after a change read the same history.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { groupIdOf, MONTH_OF_1000_GROUPS, seedHistory } from '../../test/helpers/seed-history.ts';
import { MEMORY_INDEXER, nextWaitMs } from '../../host/memory/memory-backfill.ts';
import { openStore, type Store } from '../../host/store/store.ts';
import { isMain, percentile, printFigures, round } from './stats.ts';

const DAYS = Number(process.env.BENCH_MEMORY_DAYS ?? 6);
const GROUPS = Number(process.env.BENCH_MEMORY_GROUPS ?? MONTH_OF_1000_GROUPS.groups);
const SEARCHES = 2000;
const INGEST_BATCHES = 20;
const INGEST_PER_BATCH = 500;

const mib = (bytes: number) => round(bytes / 1024 / 1024, 1);

/** Deterministic pseudo-random numbers, so each run asks the same questions. */
function lcg(seed: number) {
  let s = seed;
  return () => (s = (s * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

/** How the indexer takes ingest's messages in: never, every `every` messages, or as the host's does. */
type Indexing =
  | { kind: 'none' }
  | { kind: 'every'; every: number }
  | { kind: 'host'; msPerMessage: number; wait: number; due: number };

/** A burst of 50 messages a second, and a steady 5 a second: the simulated clock's step per message. */
const BURST_MS_PER_MESSAGE = 20;
const STEADY_MS_PER_MESSAGE = 200;

/** The host's indexer on a simulated clock, messages arriving every `msPerMessage`. */
const asTheHost = (msPerMessage: number): Indexing => ({
  kind: 'host',
  msPerMessage,
  wait: MEMORY_INDEXER.intervalMs,
  due: MEMORY_INDEXER.intervalMs,
});

/** Whether the indexer takes a step after message `i` (and, for the host's, when it wakes next). */
function stepDue(indexing: Indexing, i: number, waiting: number): boolean {
  if (indexing.kind === 'every') return (i + 1) % indexing.every === 0;
  if (indexing.kind === 'none') return false;
  const now = (i + 1) * indexing.msPerMessage;
  if (now < indexing.due) return false;
  indexing.wait = nextWaitMs(waiting, indexing.wait, MEMORY_INDEXER.intervalMs, MEMORY_INDEXER.maxIntervalMs);
  indexing.due = now + indexing.wait;
  return true;
}

/** One side of the ingest comparison: its copy of the database, open for the whole measured ingest. */
interface Side {
  store: Store;
  indexing: Indexing;
  /** Messages stored since the indexer's last step, across batches, as the host's indexer would find. */
  waiting: number;
  cpu: number;
}

/**
 * CPU ms to store `count` messages one transaction each on `side`'s open store, the indexer taking them in
 * as its `indexing` says; with `last`, what still waits is indexed too (its CPU counted).
 */
function ingestCpuMs(side: Side, from: number, count: number, last: boolean): number {
  const { store, indexing } = side;
  const start = process.cpuUsage();
  const catchUp = () => {
    while (!store.memory.backfillStep(MEMORY_INDEXER.batchSize).done);
    side.waiting = 0;
  };
  for (let i = 0; i < count; i += 1) {
    const g = (from + i) % GROUPS;
    // One transaction per message, as ingest stores them.
    store.messages.insert({
      groupId: groupIdOf(g),
      channel: 'local',
      chatId: `chat-${g}`,
      externalId: `bench-${from + i}`,
      senderId: 'u2',
      senderName: 'Bob',
      text: `the plumber said the boiler needs a new valve before winter, call ${from + i}`,
      sentAt: new Date().toISOString(),
      triggers: false,
    });
    side.waiting += 1;
    if (stepDue(indexing, from + i, side.waiting)) catchUp();
  }
  if (last && indexing.kind !== 'none') catchUp();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

/** The seeded history: kept at BENCH_MEMORY_SEED (seeded there once), copied into `file` to work on. */
function seeded(file: string): { messages: number; seconds: number } {
  const keep = process.env.BENCH_MEMORY_SEED;
  const target = keep ?? file;
  let seconds = 0;
  if (!keep || !fs.existsSync(keep)) {
    const start = Date.now();
    seedHistory(target, {
      ...MONTH_OF_1000_GROUPS,
      groups: GROUPS,
      days: DAYS,
      channel: 'local',
      endAt: Date.now(),
    });
    seconds = round((Date.now() - start) / 1000, 1);
  }
  if (keep) {
    // The kept file whole (its write-ahead log checkpointed into it), so the copy is the history.
    const source = openStore({ file: keep });
    source.db.pragma('wal_checkpoint(TRUNCATE)');
    source.close();
    fs.copyFileSync(keep, file);
  }
  const store = openStore({ file });
  const messages = (store.db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n;
  store.close();
  return { messages, seconds };
}

export async function benchMemory(): Promise<Record<string, number | string>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-memory-'));
  try {
    const withIndex = path.join(dir, 'with.db');
    const history = seeded(withIndex);

    const store = openStore({ file: withIndex });
    // The seeded history ends about when it was seeded (a kept one, days ago).
    const end = Date.parse(
      (store.db.prepare('SELECT max(sent_at) AS at FROM messages').get() as { at: string }).at,
    );
    const pageSize = store.db.pragma('page_size', { simple: true }) as number;
    const total = (store.db.pragma('page_count', { simple: true }) as number) * pageSize;
    const indexBytes =
      (
        store.db.prepare("SELECT sum(pgsize) AS n FROM dbstat WHERE name LIKE 'memory_fts%'").get() as {
          n: number;
        }
      ).n ?? 0;
    const messageBytes =
      (
        store.db.prepare("SELECT sum(pgsize) AS n FROM dbstat WHERE name LIKE 'messages%'").get() as {
          n: number;
        }
      ).n ?? 0;

    // Words as the seed has them: "chatter" is in 4 of 5 messages, "question" in 1 of 5, a day-and-number
    // key in one message of each group.
    const random = lcg(37);
    const queries = (): string => {
      const r = random();
      const day = new Date(end - Math.floor(random() * DAYS) * 86_400_000).toISOString().slice(0, 10);
      if (r < 0.4) return 'chatter';
      if (r < 0.7) return 'question';
      return `chatter ${day}-${Math.floor(random() * 50)}`;
    };
    const samples: number[] = [];
    let hits = 0;
    for (let i = 0; i < SEARCHES; i += 1) {
      const group = groupIdOf(Math.floor(random() * GROUPS));
      const q = queries();
      const t = process.hrtime.bigint();
      hits += store.memory.search(group, { text: q, limit: 10 }).length;
      samples.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    const filtered: number[] = [];
    for (let i = 0; i < SEARCHES / 4; i += 1) {
      const group = groupIdOf(Math.floor(random() * GROUPS));
      const t = process.hrtime.bigint();
      store.memory.search(group, {
        text: 'chatter',
        sender: 'Ann',
        since: new Date(end - 2 * 86_400_000).toISOString(),
        limit: 10,
      });
      filtered.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    store.close();

    // Copies of the same database: one the indexer never visits (what ingest costs when nothing is
    // indexed), one indexed in steps of 10 messages, one in steps of 100, one as the host's indexer takes a
    // burst of 50 a second, one as it takes a steady 5 a second. Totals, not medians of the batches: a step
    // of the host's indexer falls in some batches and not others, and its last one (what waits at the end)
    // in the last.
    const copy = (name: string) => {
      const file = path.join(dir, `${name}.db`);
      fs.copyFileSync(withIndex, file);
      return file;
    };
    // Each side's store stays open for the whole measured ingest, as the host keeps its one connection
    // for its life: its page cache, prepared statements and the terms cut's group prefixes stay warm.
    const plan: { indexing: Indexing; file: string }[] = [
      { indexing: { kind: 'none' }, file: copy('without') },
      { indexing: { kind: 'every', every: 10 }, file: copy('with-10') },
      { indexing: asTheHost(BURST_MS_PER_MESSAGE), file: copy('with-host') },
      { indexing: asTheHost(STEADY_MS_PER_MESSAGE), file: copy('with-steady') },
      { indexing: { kind: 'every', every: 100 }, file: withIndex },
    ];
    const sides: Side[] = plan.map(({ indexing, file }) => ({
      store: openStore({ file }),
      indexing,
      waiting: 0,
      cpu: 0,
    }));
    try {
      for (let b = 0; b < INGEST_BATCHES; b += 1) {
        // Rotating the order, so a burst of someone else's load lands on every side alike.
        const from = b * INGEST_PER_BATCH;
        for (let k = 0; k < sides.length; k += 1) {
          const side = sides[(b + k) % sides.length];
          if (side) side.cpu += ingestCpuMs(side, from, INGEST_PER_BATCH, b === INGEST_BATCHES - 1);
        }
      }
    } finally {
      for (const side of sides) side.store.close();
    }
    const [cpuWithout, cpuWithSmall, cpuWithHost, cpuWithSteady, cpuWith] = sides.map((x) => x.cpu) as [
      number,
      number,
      number,
      number,
      number,
    ];
    const n = INGEST_BATCHES * INGEST_PER_BATCH;
    return {
      history: `${GROUPS} groups × ${DAYS} days × ${MONTH_OF_1000_GROUPS.messagesPerDay} messages (a month is 30)`,
      'seeded messages': history.messages,
      'seed s (0: kept from BENCH_MEMORY_SEED)': history.seconds,
      'load average (1/5/15 min)': os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' / '),
      'search p50 ms (goal < 10)': round(percentile(samples, 50)),
      'search p99 ms (goal < 50)': round(percentile(samples, 99)),
      'search max ms': round(Math.max(...samples)),
      'hits per search (mean)': round(hits / SEARCHES, 1),
      'search with sender and time filter p50 ms': round(percentile(filtered, 50)),
      'search with sender and time filter p99 ms': round(percentile(filtered, 99)),
      'ingest CPU µs per message, without index': round((cpuWithout / n) * 1000, 1),
      'ingest CPU µs per message, indexed 100 a step': round((cpuWith / n) * 1000, 1),
      'ingest CPU µs per message, indexed 10 a step': round((cpuWithSmall / n) * 1000, 1),
      'ingest CPU µs per message, indexed as the host does in a burst of 50 a second': round(
        (cpuWithHost / n) * 1000,
        1,
      ),
      'ingest CPU µs per message, indexed as the host does at a steady 5 a second': round(
        (cpuWithSteady / n) * 1000,
        1,
      ),
      'ingest with / without, as the host indexes a burst (goal < 1.2)': round(cpuWithHost / cpuWithout, 2),
      'ingest with / without, as the host indexes a steady 5 a second': round(cpuWithSteady / cpuWithout, 2),
      'ingest with / without, 100 a step': round(cpuWith / cpuWithout, 2),
      'ingest with / without, 10 a step': round(cpuWithSmall / cpuWithout, 2),
      'database MiB': mib(total),
      'index MiB (memory_fts shadow tables)': mib(indexBytes),
      'messages table + indexes MiB': mib(messageBytes),
      'index bytes per message': round(indexBytes / history.messages, 1),
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) printFigures('memory search (bench-memory)', await benchMemory());
