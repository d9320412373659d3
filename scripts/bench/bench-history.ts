/**
 * Cost that must not grow with history. The real host (startHost with the real store, queue, executor,
 * outbox dispatcher and console channel; a runner that answers at once; no containers) serves 1,000 groups
 * at 10, 50 and 100 messages a second, on an empty database and after a simulated month written through
 * the store API (50 messages per group and day, every 5th a trigger with its run, reply, audit rows and
 * usage). Both hosts run in this process and take turns at each rate (empty, month, month, empty; half the
 * messages each turn), so load that drifts on a shared machine weighs on both sides alike. Figures: host
 * CPU per 1,000 messages, ingest → runner and → delivered p50/p99, `GET /v1/status` latency and CPU, RSS,
 * database and WAL size; the month against the empty database.
 *
 * BENCH_HISTORY_DAYS (default 6: a fifth of the month, to fit a few minutes on two busy cores; 30 for the
 * whole month) and BENCH_HISTORY_GROUPS (default 1000) scale the seed. BENCH_HISTORY_SEED_FILE keeps the
 * seeded month there and copies it on later runs instead of seeding again (delete it after a schema change).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { startHost } from '../../host/app/host.ts';
import { staticRunner } from '../../test/helpers/static-runner.ts';
import type { Channel, ChannelHost } from '../../host/channels/channel.ts';
import { createLocalClient } from '../../host/channels/local/local-client.ts';
import { EXAMPLE_CONFIG_FILE } from '../../host/cli/cli-context.ts';
import { loadConfig } from '../../host/config/load-config.ts';
import { resolvePaths } from '../../host/config/paths.ts';
import type { AgentRunner } from '../../host/router/agent-runner.ts';
import { chatIdOf, MONTH_OF_1000_GROUPS, seedHistory } from '../../test/helpers/seed-history.ts';
import { isMain, percentile, printFigures, round } from './stats.ts';

const CHANNEL = 'bench';
const RATES = [10, 50, 100];
/** Messages per rate: long enough for a p99, short enough for a shared machine. */
const MESSAGES_PER_RATE = 400;
const STATUS_CALLS = 40;

const DAYS = Number(process.env.BENCH_HISTORY_DAYS ?? 6);
const GROUPS = Number(process.env.BENCH_HISTORY_GROUPS ?? MONTH_OF_1000_GROUPS.groups);

/** Ingest, runner and delivery times of each message, by its text. */
interface Timeline {
  ingest: Map<string, number>;
  runner: Map<string, number>;
  delivered: Map<string, number>;
  waitFor?: { count: number; resolve: () => void };
}

/** Answers every trigger at once and ends; records when the host asked it to start. */
function instantRunner(t: Timeline): AgentRunner {
  return {
    start(ctx, callbacks) {
      const triggers = ctx.messages.filter((m) => m.triggers);
      const now = performance.now();
      for (const m of triggers) if (!t.runner.has(m.text)) t.runner.set(m.text, now);
      const done = (async () => {
        for (const m of triggers) await callbacks.reply(`echo:${m.text}`, { final: true });
        return { ok: true, reason: 'completed' };
      })();
      return { accepted: Promise.resolve(), input: async () => false, stop: () => undefined, done };
    },
  };
}

/** An in-process platform: the driver hands messages to the host's ingest; sends are delivered at once. */
function benchChannel(t: Timeline): Channel & { host?: ChannelHost } {
  let seq = 0;
  const since = new Date().toISOString();
  const ch: Channel & { host?: ChannelHost } = {
    name: CHANNEL,
    textLimit: 4096,
    async start(h) {
      ch.host = h;
      h.onStatus({ state: 'connected', since });
    },
    async stop() {
      ch.host = undefined;
    },
    status: () => ({ state: 'connected', since }),
    adminChatId: () => undefined,
    async send({ text }) {
      const key = text.slice('echo:'.length);
      if (t.ingest.has(key) && !t.delivered.has(key)) {
        t.delivered.set(key, performance.now());
        if (t.waitFor && t.delivered.size >= t.waitFor.count) t.waitFor.resolve();
      }
      seq += 1;
      return { kind: 'delivered', platformIds: [`bench-${seq}`] };
    },
    async setTyping() {},
  };
  return ch;
}

const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;
const size = (file: string) => (fs.existsSync(file) ? fs.statSync(file).size : 0);
const mib = (n: number) => round(n / 1048576, 1);

/** One live host on its own database: the empty one or the seeded month. */
interface BenchHost {
  label: 'empty' | 'month';
  timeline: Timeline;
  channel: Channel & { host?: ChannelHost };
  paths: ReturnType<typeof resolvePaths>;
  dir: string;
  stop: () => Promise<void>;
  figures: Record<string, number>;
  /** Per rate, every message's ingest → runner and ingest → delivered, over both halves. */
  samples: Map<number, { toRunner: number[]; toDelivered: number[]; cpuMs: number; messages: number }>;
  sent: number;
}

async function openHost(label: 'empty' | 'month', seedDays: number): Promise<BenchHost> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `carapace-bench-history-${label}-`));
  const env = { CARAPACE_CONFIG_DIR: path.join(dir, 'cfg'), CARAPACE_DATA_DIR: path.join(dir, 'data') };
  fs.mkdirSync(env.CARAPACE_CONFIG_DIR, { recursive: true });
  fs.writeFileSync(
    path.join(env.CARAPACE_CONFIG_DIR, 'config.toml'),
    '[runs]\nmax_concurrent = 64\n[logging]\nlevel = "error"\n',
  );
  const paths = resolvePaths({ env, cwd: dir });
  const figures: Record<string, number> = {};
  // The seed runs in a process of its own, so its memory is not counted in the host's RSS.
  const seedStart = performance.now();
  const kept = seedDays > 0 ? process.env.BENCH_HISTORY_SEED_FILE : undefined;
  const seedFile = kept ?? paths.databaseFile;
  if (!kept || !fs.existsSync(kept)) {
    execFileSync(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(import.meta.url), '--seed', seedFile, String(seedDays)],
      { stdio: 'inherit' },
    );
  }
  if (kept) {
    fs.mkdirSync(path.dirname(paths.databaseFile), { recursive: true, mode: 0o700 });
    fs.copyFileSync(kept, paths.databaseFile);
  }
  figures[`${label}: seed s`] = round((performance.now() - seedStart) / 1000, 1);

  const timeline: Timeline = { ingest: new Map(), runner: new Map(), delivered: new Map() };
  const channel = benchChannel(timeline);
  const host = await startHost({
    paths,
    config: loadConfig({ configFile: paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE }),
    createRunner: staticRunner(instantRunner(timeline)),
    logger: pino({ level: 'silent' }),
    redact: (s) => s,
    extraChannels: [channel],
  });
  return {
    label,
    timeline,
    channel,
    paths,
    dir,
    stop: () => host.stop('bench done'),
    figures,
    samples: new Map(),
    sent: 0,
  };
}

/** Sends `count` triggers at `rate` to one host and waits until every reply is delivered. */
async function sendAt(h: BenchHost, rate: number, count: number): Promise<void> {
  const t = h.timeline;
  const all = new Promise<void>((resolve) => (t.waitFor = { count: t.delivered.size + count, resolve }));
  const texts: string[] = [];
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    h.sent += 1;
    const n = h.sent;
    const g = (n * 7919) % GROUPS;
    const text = `@Andy ${h.label} ${rate} ${n}`;
    texts.push(text);
    t.ingest.set(text, performance.now());
    h.channel.host?.ingest({
      channel: CHANNEL,
      chatId: chatIdOf(g),
      externalId: `load-${n}`,
      senderId: 'u1',
      senderName: 'Ann',
      text,
      sentAt: new Date().toISOString(),
      mentionsBot: true,
      repliesToBot: false,
      fromOwner: false,
      origin: { kind: 'own' },
    });
  }
  await all;
  const s = h.samples.get(rate) ?? { toRunner: [], toDelivered: [], cpuMs: 0, messages: 0 };
  s.cpuMs += cpuMs(process.cpuUsage(cpu));
  s.messages += count;
  for (const x of texts) {
    s.toRunner.push((t.runner.get(x) ?? NaN) - (t.ingest.get(x) ?? NaN));
    s.toDelivered.push((t.delivered.get(x) ?? NaN) - (t.ingest.get(x) ?? NaN));
  }
  h.samples.set(rate, s);
}

/** The rate's figures from both halves, the status call's cost, RSS and sizes; then the host stops. */
async function closeHost(h: BenchHost): Promise<Record<string, number>> {
  const { label, figures, paths } = h;
  for (const [rate, s] of h.samples) {
    figures[`${label} ${rate}/s: CPU s per 1000 msgs`] = round(s.cpuMs / s.messages, 2);
    figures[`${label} ${rate}/s: ingest→runner p50 ms`] = round(percentile(s.toRunner, 50), 2);
    figures[`${label} ${rate}/s: ingest→runner p99 ms`] = round(percentile(s.toRunner, 99), 2);
    figures[`${label} ${rate}/s: ingest→delivered p50 ms`] = round(percentile(s.toDelivered, 50), 2);
    figures[`${label} ${rate}/s: ingest→delivered p99 ms`] = round(percentile(s.toDelivered, 99), 2);
  }
  try {
    const client = createLocalClient({ socketFile: paths.socketFile, pidFile: paths.pidFile });
    const latencies: number[] = [];
    const cpu = process.cpuUsage();
    for (let i = 0; i < STATUS_CALLS; i++) {
      const s = performance.now();
      await client.getJson('/v1/status');
      latencies.push(performance.now() - s);
    }
    figures[`${label}: status median ms`] = round(percentile(latencies, 50), 2);
    figures[`${label}: status CPU ms per call`] = round(cpuMs(process.cpuUsage(cpu)) / STATUS_CALLS, 2);
  } finally {
    figures[`${label}: database MiB`] = mib(size(paths.databaseFile));
    figures[`${label}: WAL MiB`] = mib(size(`${paths.databaseFile}-wal`));
    await h.stop();
    fs.rmSync(h.dir, { recursive: true, force: true });
  }
  return figures;
}

export async function benchHistory(): Promise<Record<string, number | string>> {
  const load = os.loadavg().map((l) => l.toFixed(2));
  const emptyHost = await openHost('empty', 0);
  const monthHost = await openHost('month', DAYS);
  let rss = process.memoryUsage().rss;
  const sampler = setInterval(() => (rss = Math.max(rss, process.memoryUsage().rss)), 100);
  let empty: Record<string, number> = {};
  let month: Record<string, number> = {};
  try {
    // Both hosts live and the rates interleaved (empty, month, month, empty at each rate), so a shared
    // machine's load, which drifts over minutes, falls on both sides alike and the ratio stays fair.
    const half = MESSAGES_PER_RATE / 2;
    for (const rate of RATES) {
      for (const h of [emptyHost, monthHost, monthHost, emptyHost]) await sendAt(h, rate, half);
    }
  } finally {
    clearInterval(sampler);
    empty = await closeHost(emptyHost);
    month = await closeHost(monthHost);
  }
  const ratio = (a: string, b: string) =>
    round((month[`month${a}`] ?? NaN) / (empty[`empty${b ?? a}`] ?? NaN), 2);
  const ratios: Record<string, number> = {};
  for (const rate of RATES) {
    ratios[`${rate}/s: CPU per 1000 msgs, month / empty (goal ≤ 1.5)`] = ratio(
      ` ${rate}/s: CPU s per 1000 msgs`,
      ` ${rate}/s: CPU s per 1000 msgs`,
    );
    // The tail SQLite's automatic checkpoint used to add on the message path (wal-checkpoints.ts).
    ratios[`${rate}/s: delivered p99, month / empty (goal ≤ 1.2)`] = ratio(
      ` ${rate}/s: ingest→delivered p99 ms`,
      ` ${rate}/s: ingest→delivered p99 ms`,
    );
  }
  ratios['status median, month / empty (goal ≤ 2)'] = ratio(': status median ms', ': status median ms');
  // Latency on a shared machine is mostly other people's work; the host's own CPU per call is steadier.
  ratios['status CPU per call, month / empty'] = ratio(
    ': status CPU ms per call',
    ': status CPU ms per call',
  );
  return {
    history: `${GROUPS} groups × ${DAYS} days × ${MONTH_OF_1000_GROUPS.messagesPerDay} messages (a month is 30)`,
    'load average at start (1/5/15 min)': load.join(' / '),
    ...empty,
    ...month,
    ...ratios,
    'goal: month 100/s ingest→delivered p99 < 50 ms': month['month 100/s: ingest→delivered p99 ms'] ?? NaN,
    // Both hosts share this process: an upper bound on either one's (the month alone stayed under 300).
    'RSS peak MiB, both hosts': mib(rss),
    'load average at end (1/5/15 min)': os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' / '),
  };
}

if (process.argv[2] === '--seed') {
  const [file, days] = [process.argv[3] as string, Number(process.argv[4])];
  seedHistory(file, {
    ...MONTH_OF_1000_GROUPS,
    groups: GROUPS,
    days,
    channel: CHANNEL,
    endAt: Date.now(),
  });
} else if (isMain(import.meta.url)) printFigures('cost with a month of history', await benchHistory());
