/**
 * Memory search and its cost (issue 37): on the scale bench's seeded history (test/helpers/seed-history.ts,
 * 1,000 groups × 50 messages a day), search p50/p99 for words as common as the seed has and as rare, each
 * query in one random group; ingest CPU per message with the index vs without it, alternating in the same run
 * on copies of the same database; and the database's growth from the index (dbstat).
 *
 * With the index, ingest stores each message in its own transaction as the host does, and the indexer takes
 * the waiting ones in as one step every `every` messages (the host's indexer runs every 2 s, so a step holds
 * what arrived in 2 s: 10 messages is 5 a second, 100 is 50 a second); its CPU is counted with ingest's.
 *
 * BENCH_MEMORY_DAYS (default 6, a fifth of the month like bench-history; 30 for the whole month) and
 * BENCH_MEMORY_GROUPS (default 1000) scale the seed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { groupIdOf, MONTH_OF_1000_GROUPS, seedHistory } from '../../test/helpers/seed-history.ts';
import { openStore } from '../../host/store/store.ts';
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

/** CPU ms to store `count` messages one transaction each; with `indexEvery`, and to index them every so many. */
function ingestCpuMs(file: string, from: number, count: number, indexEvery?: number): number {
  const store = openStore({ file });
  try {
    const start = process.cpuUsage();
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
      if (indexEvery !== undefined && (i + 1) % indexEvery === 0) store.memory.backfillStep(indexEvery);
    }
    const used = process.cpuUsage(start);
    return (used.user + used.system) / 1000;
  } finally {
    store.close();
  }
}

export async function benchMemory(): Promise<Record<string, number | string>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-memory-'));
  try {
    const withIndex = path.join(dir, 'with.db');
    const seedStart = Date.now();
    const seeded = seedHistory(withIndex, {
      ...MONTH_OF_1000_GROUPS,
      groups: GROUPS,
      days: DAYS,
      channel: 'local',
      endAt: Date.now(),
    });
    const seedSeconds = round((Date.now() - seedStart) / 1000, 1);

    const store = openStore({ file: withIndex });
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
      const day = new Date(Date.now() - Math.floor(random() * DAYS) * 86_400_000).toISOString().slice(0, 10);
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
        since: new Date(Date.now() - 2 * 86_400_000).toISOString(),
        limit: 10,
      });
      filtered.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    store.close();

    // Copies of the same database: one the indexer never visits (what ingest costs when nothing is
    // indexed), one indexed in steps of 10 messages, one in steps of 100.
    const without = path.join(dir, 'without.db');
    const withSmall = path.join(dir, 'with-10.db');
    fs.copyFileSync(withIndex, without);
    fs.copyFileSync(withIndex, withSmall);
    const sides: { file: string; every?: number; cpu: number }[] = [
      { file: without, cpu: 0 },
      { file: withSmall, every: 10, cpu: 0 },
      { file: withIndex, every: 100, cpu: 0 },
    ];
    for (let b = 0; b < INGEST_BATCHES; b += 1) {
      // Rotating the order, so a burst of someone else's load lands on every side alike.
      const from = b * INGEST_PER_BATCH;
      for (let k = 0; k < sides.length; k += 1) {
        const side = sides[(b + k) % sides.length];
        if (side) side.cpu += ingestCpuMs(side.file, from, INGEST_PER_BATCH, side.every);
      }
    }
    const [cpuWithout, cpuWithSmall, cpuWith] = sides.map((x) => x.cpu) as [number, number, number];
    const n = INGEST_BATCHES * INGEST_PER_BATCH;
    return {
      history: `${GROUPS} groups × ${DAYS} days × ${MONTH_OF_1000_GROUPS.messagesPerDay} messages (a month is 30)`,
      'seeded messages': seeded.messages,
      'seed s': seedSeconds,
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
      'ingest with / without, 100 a step (goal < 1.2)': round(cpuWith / cpuWithout, 2),
      'ingest with / without, 10 a step': round(cpuWithSmall / cpuWithout, 2),
      'database MiB': mib(total),
      'index MiB (memory_fts shadow tables)': mib(indexBytes),
      'messages table + indexes MiB': mib(messageBytes),
      'index bytes per message': round(indexBytes / seeded.messages, 1),
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) printFigures('memory search (bench-memory)', await benchMemory());
