/**
 * Cost that must not grow with history. The real host (startHost with the real store, queue, executor,
 * outbox dispatcher and console channel; a runner that answers at once; no containers) serves 1,000 groups
 * at 10, 50 and 100 messages a second, on an empty database and after a simulated month written through
 * the store API (50 messages per group and day, every 5th a trigger with its run, reply, audit rows and
 * usage). Figures: host CPU per 1,000 messages, ingest → runner and → delivered p50/p99, `GET /v1/status`
 * latency and CPU, RSS, database and WAL size; the month against the empty database.
 *
 * How the two are compared. Each host runs in a process of its own and both serve the same rate at the
 * same time, their messages of each beat sent 2 ms apart, in turns (empty first on one beat, the month
 * on the next), so whatever else the machine runs falls on both alike, and neither host's work holds
 * the other's event loop. (An earlier version ran both hosts in one process and took turns, a few hundred
 * messages each: minutes apart, so a shared machine's drifting load still decided the ratio.) A p99 needs
 * samples: BENCH_HISTORY_MESSAGES (default 1,200) per host and rate makes it the 12th slowest delivery; at
 * the old 400 it was the 4th, and one preempted message moved it. At 10 msg/s that is two minutes. Even
 * so, on a loaded machine those dozen are the ones the kernel descheduled, often in one episode, so each
 * ratio comes with a bootstrap interval (`p99RatioInterval`): how far it moves by chance alone.
 *
 * BENCH_HISTORY_BASELINE=<another checkout> runs that checkout's host code as two more processes on the
 * same beats, for a before/after in one run (four hosts load two cores: rates up to 50 only).
 * BENCH_HISTORY_TRACE=1 prints what each host's slowest 1% of deliveries overlapped
 * (bench-history-trace.ts). BENCH_HISTORY_DAYS (default 6: a fifth of the month, to fit a few minutes on
 * two busy cores; 30 for the whole month) and BENCH_HISTORY_GROUPS (default 1000) scale the seed,
 * BENCH_HISTORY_RATES (default 10,50,100) the rates.
 * BENCH_HISTORY_SEED_FILE keeps the seeded month there and copies it on later runs instead of seeding
 * again (delete it after a schema change).
 */
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pino from 'pino';
import type { Channel, ChannelHost } from '../../host/channels/channel.ts';
import type { AgentRunner } from '../../host/router/agent-runner.ts';
import { chatIdOf, MONTH_OF_1000_GROUPS, seedHistory } from '../../test/helpers/seed-history.ts';
import { overlapping, startHistoryTrace } from './bench-history-trace.ts';
import { isMain, percentile, printFigures, round } from './stats.ts';

const CHANNEL = 'bench';
const RATES = (process.env.BENCH_HISTORY_RATES ?? '10,50,100').split(',').map(Number);
/** Messages per host and rate: the p99 is the (n/100)th slowest. */
const MESSAGES_PER_RATE = Number(process.env.BENCH_HISTORY_MESSAGES ?? 1200);
const STATUS_CALLS = 40;
const TRACE = process.env.BENCH_HISTORY_TRACE === '1';
/**
 * How far apart the hosts' messages of one beat are sent: a few milliseconds, so a stall of the machine
 * (tens of milliseconds when the kernel deschedules a process) catches both, and under a beat at 100/s.
 */
const STAGGER_MS = 2;

const DAYS = Number(process.env.BENCH_HISTORY_DAYS ?? 6);
const GROUPS = Number(process.env.BENCH_HISTORY_GROUPS ?? MONTH_OF_1000_GROUPS.groups);

const SELF = fileURLToPath(import.meta.url);
const OWN_ROOT = path.resolve(path.dirname(SELF), '../..');

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
/** Wall-clock milliseconds with performance.now()'s precision, comparable between processes. */
const epochNow = () => performance.timeOrigin + performance.now();

/** What the parent asks a host process, and what it answers. */
type Ask =
  | { kind: 'send'; rate: number; count: number; firstAt: number; slot: number; slots: number }
  | { kind: 'close' };
interface RateResult {
  toRunner: number[];
  toDelivered: number[];
  cpuMs: number;
}
type Answer =
  | { kind: 'ready' }
  | { kind: 'sent'; result: RateResult }
  | { kind: 'closed'; figures: Record<string, number> };

/**
 * One host in this process (a child of the bench): `root` is the checkout whose host code runs, `dir`
 * holds its config and prepared database. Sends what the parent asks, at the times it gives.
 */
async function runHost(label: string, root: string, dir: string): Promise<void> {
  const from = (rel: string) => import(pathToFileURL(path.join(root, rel)).href);
  const [{ startHost }, { loadConfig }, { resolvePaths }, { EXAMPLE_CONFIG_FILE }, { createLocalClient }] =
    await Promise.all([
      from('host/app/host.ts'),
      from('host/config/load-config.ts'),
      from('host/config/paths.ts'),
      from('host/cli/cli-context.ts'),
      from('host/channels/local/local-client.ts'),
    ]);
  const paths = resolvePaths({ env: hostEnv(dir), cwd: dir });
  const timeline: Timeline = { ingest: new Map(), runner: new Map(), delivered: new Map() };
  const channel = benchChannel(timeline);
  const trace = TRACE ? startHistoryTrace() : undefined;
  const host = await startHost({
    paths,
    config: loadConfig({ configFile: paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE }),
    createRunner: async () => ({ runner: instantRunner(timeline), close: async () => undefined }),
    logger: pino({ level: 'silent' }),
    redact: (s: string) => s,
    extraChannels: [channel],
  });
  let sent = 0;
  let closed = false;
  const answer = (a: Answer) => process.send?.(a);

  async function sendAt(ask: Extract<Ask, { kind: 'send' }>): Promise<RateResult> {
    const { rate, count, firstAt, slot, slots } = ask;
    const t = timeline;
    const all = new Promise<void>((resolve) => (t.waitFor = { count: t.delivered.size + count, resolve }));
    const texts: string[] = [];
    const cpu = process.cpuUsage();
    for (let i = 0; i < count; i++) {
      // Each beat the hosts send in turn, STAGGER_MS apart, and the turn rotates: no host is always first.
      const wait = firstAt + (i * 1000) / rate + ((slot + i) % slots) * STAGGER_MS - epochNow();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      sent += 1;
      const n = sent;
      const g = (n * 7919) % GROUPS;
      const text = `@Andy ${label} ${rate} ${n}`;
      texts.push(text);
      t.ingest.set(text, performance.now());
      channel.host?.ingest({
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
    const result: RateResult = { toRunner: [], toDelivered: [], cpuMs: cpuMs(process.cpuUsage(cpu)) };
    for (const x of texts) {
      result.toRunner.push((t.runner.get(x) ?? NaN) - (t.ingest.get(x) ?? NaN));
      result.toDelivered.push((t.delivered.get(x) ?? NaN) - (t.ingest.get(x) ?? NaN));
    }
    if (trace) {
      const slowest = texts
        .map((x) => ({ x, total: (t.delivered.get(x) ?? NaN) - (t.ingest.get(x) ?? NaN) }))
        .sort((a, b) => b.total - a.total)
        .slice(0, Math.ceil(count / 100));
      const lines = [`\n${label} ${rate}/s: slowest ${slowest.length} of ${count}`];
      for (const m of slowest) {
        const at = t.ingest.get(m.x) as number;
        lines.push(`  ${round(m.total, 2)} ms (runner at ${round((t.runner.get(m.x) ?? NaN) - at, 2)})`);
        for (const line of overlapping(trace.events, at, at + m.total)) lines.push(`      ${line}`);
      }
      // Is a kind of event a cause? The slowest overlap it more often than deliveries do at all.
      const windows = texts.map((x) => [t.ingest.get(x) as number, t.delivered.get(x) as number]);
      const slowSet = new Set(slowest.map((m) => m.x));
      for (const kind of ['checkpoint', 'gc', 'stall'] as const) {
        const of = trace.events.filter((e) => e.kind === kind);
        const hit = (w: number[]) => of.some((e) => e.end >= (w[0] as number) && e.start <= (w[1] as number));
        const allShare = windows.filter(hit).length / windows.length;
        const slowShare =
          texts.filter((x, i) => slowSet.has(x) && hit(windows[i] as number[])).length / slowest.length;
        lines.push(
          `  overlapping a ${kind}: ${round(slowShare * 100, 0)}% of the slowest, ${round(allShare * 100, 0)}% of all`,
        );
      }
      process.stderr.write(`${lines.join('\n')}\n`);
    }
    return result;
  }

  async function close(): Promise<Record<string, number>> {
    trace?.stop();
    const figures: Record<string, number> = {};
    try {
      const client = createLocalClient({ socketFile: paths.socketFile, pidFile: paths.pidFile });
      const latencies: number[] = [];
      const cpu = process.cpuUsage();
      for (let i = 0; i < STATUS_CALLS; i++) {
        const s = performance.now();
        await client.getJson('/v1/status');
        latencies.push(performance.now() - s);
      }
      figures['status median ms'] = round(percentile(latencies, 50), 2);
      figures['status CPU ms per call'] = round(cpuMs(process.cpuUsage(cpu)) / STATUS_CALLS, 2);
    } finally {
      figures['database MiB'] = mib(size(paths.databaseFile));
      figures['WAL MiB'] = mib(size(`${paths.databaseFile}-wal`));
      figures['RSS peak MiB'] = round(process.resourceUsage().maxRSS / 1024, 1);
      await host.stop('bench done');
    }
    return figures;
  }

  process.on('message', (raw) => {
    const ask = raw as Ask;
    if (ask.kind === 'send') void sendAt(ask).then((result) => answer({ kind: 'sent', result }));
    else {
      closed = true;
      void close().then((figures) =>
        process.send?.({ kind: 'closed', figures } satisfies Answer, () => process.disconnect()),
      );
    }
  });
  // A bench that died leaves no host behind (its folder is the parent's to remove).
  process.once('disconnect', () => {
    if (!closed) void host.stop('bench gone').finally(() => process.exit(1));
  });
  answer({ kind: 'ready' });
}

const hostEnv = (dir: string) => ({
  CARAPACE_CONFIG_DIR: path.join(dir, 'cfg'),
  CARAPACE_DATA_DIR: path.join(dir, 'data'),
});

/** A folder with the host's config and its database: empty (groups only) or the seeded month. */
function prepareHost(label: string, seedDays: number): { dir: string; seedS: number } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `carapace-bench-history-${label}-`));
  const env = hostEnv(dir);
  fs.mkdirSync(env.CARAPACE_CONFIG_DIR, { recursive: true });
  fs.mkdirSync(env.CARAPACE_DATA_DIR, { recursive: true, mode: 0o700 });
  fs.writeFileSync(
    path.join(env.CARAPACE_CONFIG_DIR, 'config.toml'),
    '[runs]\nmax_concurrent = 64\n[logging]\nlevel = "error"\n',
  );
  // The database file's name as resolvePaths gives it (data/carapace.db); checked by the host's start.
  const databaseFile = path.join(env.CARAPACE_DATA_DIR, 'carapace.db');
  const seedStart = performance.now();
  const kept = seedDays > 0 ? process.env.BENCH_HISTORY_SEED_FILE : undefined;
  const seedFile = kept ?? databaseFile;
  // The seed runs in a process of its own, so its memory is not counted in a host's RSS.
  if (!kept || !fs.existsSync(kept))
    execFileSync(process.execPath, ['--import', 'tsx', SELF, '--seed', seedFile, String(seedDays)], {
      stdio: 'inherit',
    });
  if (kept) fs.copyFileSync(kept, databaseFile);
  return { dir, seedS: round((performance.now() - seedStart) / 1000, 1) };
}

/**
 * How far the month / empty p99 ratio could move by chance: a paired moving-block bootstrap. The slowest
 * deliveries come in episodes (one stall or major GC delays every message of the next few hundred
 * milliseconds: at 50 msg/s the slowest 1% is often one episode), so single deliveries resampled alone
 * would understate it; whole seconds of both hosts' deliveries, the same seconds for both (they were sent
 * on the same beats), resampled with replacement and a fixed seed. The 5th and 95th percentiles of the
 * ratio: a ratio whose interval straddles the goal met or missed it by luck.
 */
function p99RatioInterval(
  month: number[],
  empty: number[],
  rate: number,
  resamples = 1000,
): [number, number] {
  const n = Math.min(month.length, empty.length);
  if (n === 0) return [NaN, NaN];
  const block = Math.max(1, Math.min(rate, n));
  let seed = 0x2545f491;
  const random = () => {
    // mulberry32
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const ratios = Array.from({ length: resamples }, () => {
    const m: number[] = [];
    const e: number[] = [];
    while (m.length < n) {
      const start = Math.floor(random() * (n - block + 1));
      for (let i = start; i < start + block && m.length < n; i++) {
        m.push(month[i] as number);
        e.push(empty[i] as number);
      }
    }
    return percentile(m, 99) / percentile(e, 99);
  });
  return [round(percentile(ratios, 5), 2), round(percentile(ratios, 95), 2)];
}

/** A host process, and a way to ask it something and wait for its answer. */
interface HostProcess {
  label: string;
  child: ChildProcess;
  ask(a: Ask): Promise<Answer>;
}

function spawnHost(label: string, root: string, dir: string): Promise<HostProcess> {
  const child = fork(SELF, ['--host', label, root, dir], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  const next = () =>
    new Promise<Answer>((resolve, reject) => {
      const failed = (code: number | null) => reject(new Error(`the ${label} host exited (${code})`));
      child.once('exit', failed);
      child.once('message', (m) => {
        child.off('exit', failed);
        resolve(m as Answer);
      });
    });
  const proc: HostProcess = {
    label,
    child,
    ask(a) {
      const answer = next();
      child.send(a);
      return answer;
    },
  };
  return next().then(() => proc);
}

export async function benchHistory(): Promise<Record<string, number | string>> {
  const load = os.loadavg().map((l) => l.toFixed(2));
  const baseline = process.env.BENCH_HISTORY_BASELINE;
  const sides: { label: string; root: string; days: number }[] = [
    { label: 'empty', root: OWN_ROOT, days: 0 },
    { label: 'month', root: OWN_ROOT, days: DAYS },
    ...(baseline
      ? [
          { label: 'baseline empty', root: path.resolve(baseline), days: 0 },
          { label: 'baseline month', root: path.resolve(baseline), days: DAYS },
        ]
      : []),
  ];
  const figures: Record<string, number | string> = {
    history: `${GROUPS} groups × ${DAYS} days × ${MONTH_OF_1000_GROUPS.messagesPerDay} messages (a month is 30)`,
    'messages per host and rate (the p99 is the n/100th slowest)': MESSAGES_PER_RATE,
    'load average at start (1/5/15 min)': load.join(' / '),
  };
  const prepared = sides.map((s) => ({ ...s, ...prepareHost(s.label.replace(' ', '-'), s.days) }));
  const hosts: HostProcess[] = [];
  const samples = new Map<string, RateResult>();
  try {
    for (const p of prepared) {
      figures[`${p.label}: seed s`] = p.seedS;
      hosts.push(await spawnHost(p.label, p.root, p.dir));
    }
    for (const rate of RATES) {
      const firstAt = epochNow() + 500;
      const results = await Promise.all(
        hosts.map((h, i) =>
          h.ask({
            kind: 'send',
            rate,
            count: MESSAGES_PER_RATE,
            firstAt,
            slot: i,
            slots: hosts.length,
          }),
        ),
      );
      results.forEach((r, i) => {
        if (r.kind === 'sent') samples.set(`${(hosts[i] as HostProcess).label} ${rate}`, r.result);
      });
    }
    for (const h of hosts) {
      for (const rate of RATES) {
        const s = samples.get(`${h.label} ${rate}`);
        if (!s) continue;
        figures[`${h.label} ${rate}/s: CPU s per 1000 msgs`] = round(s.cpuMs / MESSAGES_PER_RATE, 2);
        figures[`${h.label} ${rate}/s: ingest→runner p50 ms`] = round(percentile(s.toRunner, 50), 2);
        figures[`${h.label} ${rate}/s: ingest→runner p99 ms`] = round(percentile(s.toRunner, 99), 2);
        figures[`${h.label} ${rate}/s: ingest→delivered p50 ms`] = round(percentile(s.toDelivered, 50), 2);
        figures[`${h.label} ${rate}/s: ingest→delivered p99 ms`] = round(percentile(s.toDelivered, 99), 2);
      }
    }
  } finally {
    for (const h of hosts) {
      const closed = await h.ask({ kind: 'close' }).catch(() => undefined);
      if (closed?.kind === 'closed')
        for (const [k, v] of Object.entries(closed.figures)) figures[`${h.label}: ${k}`] = v;
    }
    for (const p of prepared) fs.rmSync(p.dir, { recursive: true, force: true });
  }
  const pairs: [string, string][] = [['month', 'empty']];
  if (baseline) pairs.push(['baseline month', 'baseline empty']);
  for (const [m, e] of pairs) {
    const ratio = (key: string) => round(Number(figures[`${m}${key}`]) / Number(figures[`${e}${key}`]), 2);
    const prefix = m === 'month' ? '' : 'baseline ';
    for (const rate of RATES) {
      figures[`${prefix}${rate}/s: CPU per 1000 msgs, month / empty (goal ≤ 1.5)`] = ratio(
        ` ${rate}/s: CPU s per 1000 msgs`,
      );
      // The tail SQLite's automatic checkpoint used to add on the message path (wal-checkpoints.ts).
      figures[`${prefix}${rate}/s: delivered p99, month / empty (goal ≤ 1.2)`] = ratio(
        ` ${rate}/s: ingest→delivered p99 ms`,
      );
      const [low, high] = p99RatioInterval(
        samples.get(`${m} ${rate}`)?.toDelivered ?? [],
        samples.get(`${e} ${rate}`)?.toDelivered ?? [],
        rate,
      );
      figures[`${prefix}${rate}/s: delivered p99, month / empty, 90% bootstrap interval`] =
        `${low} – ${high}`;
    }
    figures[`${prefix}status median, month / empty (goal ≤ 2)`] = ratio(': status median ms');
    // Latency on a shared machine is mostly other people's work; the host's own CPU per call is steadier.
    figures[`${prefix}status CPU per call, month / empty`] = ratio(': status CPU ms per call');
  }
  if (baseline)
    for (const rate of RATES)
      figures[`${rate}/s: month delivered p99, this / baseline`] = round(
        Number(figures[`month ${rate}/s: ingest→delivered p99 ms`]) /
          Number(figures[`baseline month ${rate}/s: ingest→delivered p99 ms`]),
        2,
      );
  figures['goal: month 100/s ingest→delivered p99 < 50 ms'] =
    figures['month 100/s: ingest→delivered p99 ms'] ?? NaN;
  figures['load average at end (1/5/15 min)'] = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
  return figures;
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
} else if (process.argv[2] === '--host') {
  await runHost(process.argv[3] as string, process.argv[4] as string, process.argv[5] as string);
} else if (isMain(import.meta.url)) printFigures('cost with a month of history', await benchHistory());
