/**
 * The gateway's cost on the LLM path, against the same fake provider called directly in the same run.
 *
 * Three processes, so that an extra hop is not charged for sharing one event loop: the fake provider runs
 * in its own process (bench-gateway-provider-worker.ts), the client in another
 * (bench-gateway-client-worker.ts), and the gateway (createGateway, with the SQLite usage store and a
 * pino logger at info, as the host wires it) in this one. A bare undici pass-through proxy in this process
 * is measured too, to tell the cost of any hop from the cost of the gateway's own work. Sides are
 * interleaved in rotating order so drift (GC, JIT, CPU frequency, other load) hits each alike.
 *
 * Figures: time to first body byte and total time of a short streamed reply (medians, ratio, added ms),
 * throughput of a large stream (ratio), CPU per large stream in each process (to see whether the machine's
 * cores, not the gateway, are the limit), and abort propagation: the client aborts mid-stream, the
 * provider process notes when it sees the connection close; both times are on the system-wide monotonic
 * clock, so they subtract across processes.
 *
 * The client asks for `stream: true` only. The gateway adds `stream_options.include_usage` upstream to
 * count spend, so on its side the provider puts `"usage": null` in every chunk (as OpenAI does) and a
 * final usage chunk that the gateway strips again: that work is part of what is measured.
 *
 * Profiling: BENCH_CPU_PROF_DIR=<dir> makes the workers write .cpuprofile files there; run this script
 * itself with `node --cpu-prof --import tsx` to profile the gateway's process.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { Agent, request } from 'undici';
import type { z } from 'zod';
import { gatewayConfigSchema, providerConfigSchema } from '../../host/gateway/config.ts';
import { createGateway } from '../../host/gateway/gateway.ts';
import { createSqliteUsageStore } from '../../host/gateway/spend/usage-store-sqlite.ts';
import { createWriteBehindUsageStore } from '../../host/gateway/spend/usage-write-behind.ts';
import { createLogger } from '../../host/logging/create-logger.ts';
import { openStore } from '../../host/store/store.ts';
import { clientResultSchema, type ClientCommand, type ClientResult } from './bench-gateway-client-worker.ts';
import {
  providerEventSchema,
  type ProviderEvent,
  type ProviderOptions,
} from './bench-gateway-provider-worker.ts';
import { isMain, median, percentile, printFigures, round } from './stats.ts';
import { systemClock } from '../../host/time/clock.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PROJECT_ROOT = path.resolve(HERE, '..', '..');
const SMALL_WARMUP = 30;
const SMALL_SAMPLES = 200;
const LARGE_WARMUP = 2;
const LARGE_SAMPLES = 12;
const ABORT_WARMUP = 5;
const ABORT_SAMPLES = 40;
const LARGE_BYTES = 8 * 1024 * 1024;
const REAL_KEY = 'sk-bench-provider-key-0123456789';
const SHORT_REPLY =
  'The quick brown fox jumps over the lazy dog and keeps on running through the field until dusk.';
/** Longest wait for any one answer from a worker; the whole bench stays bounded by it. */
const STEP_TIMEOUT_MS = 30_000;

type Side = 'direct' | 'proxy' | 'gateway';
const ROTATIONS: Side[][] = [
  ['direct', 'proxy', 'gateway'],
  ['gateway', 'direct', 'proxy'],
  ['proxy', 'gateway', 'direct'],
];

interface Target {
  url: string;
  key: string;
}

/** Values keyed by a string that may arrive before or after someone waits for them. */
function createMailbox<T>(what: string) {
  const arrived = new Map<string, T>();
  const waiting = new Map<string, { resolve: (v: T) => void; reject: (e: Error) => void }>();
  let failure: Error | undefined;
  return {
    put(key: string, value: T) {
      const waiter = waiting.get(key);
      if (waiter) {
        waiting.delete(key);
        waiter.resolve(value);
      } else arrived.set(key, value);
    },
    take(key: string, timeoutMs = STEP_TIMEOUT_MS): Promise<T> {
      if (arrived.has(key)) {
        const value = arrived.get(key) as T;
        arrived.delete(key);
        return Promise.resolve(value);
      }
      if (failure) return Promise.reject(failure);
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(key);
          reject(new Error(`no ${what} "${key}" within ${timeoutMs} ms`));
        }, timeoutMs);
        waiting.set(key, {
          resolve: (v) => (clearTimeout(timer), resolve(v)),
          reject: (e) => (clearTimeout(timer), reject(e)),
        });
      });
    },
    fail(error: Error) {
      failure = error;
      for (const w of waiting.values()) w.reject(error);
      waiting.clear();
    },
  };
}

function forkWorker(file: string, args: string[]): ChildProcess {
  const profDir = process.env.BENCH_CPU_PROF_DIR;
  return fork(path.join(HERE, file), args, {
    cwd: PROJECT_ROOT,
    execArgv: ['--import', 'tsx', ...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [])],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

/** Routes a worker's validated messages to `onMessage`; a bad message or an early exit fails the mailbox. */
function listen<S extends z.ZodType>(
  child: ChildProcess,
  schema: S,
  name: string,
  onMessage: (m: z.infer<S>) => void,
  onFailure: (e: Error) => void,
): void {
  child.on('message', (raw) => {
    const parsed = schema.safeParse(raw);
    if (parsed.success) onMessage(parsed.data);
    else onFailure(new Error(`${name} sent a malformed message: ${parsed.error.message}`));
  });
  child.on('exit', (code, signal) => onFailure(new Error(`${name} exited (code ${code}, signal ${signal})`)));
  child.on('error', onFailure);
}

/** Waits for a worker to exit after it was asked to close; kills it (by its own handle) if it does not. */
async function stopWorker(child: ChildProcess, closeMessage: unknown): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  if (child.connected) child.send(closeMessage as object);
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** The least a forwarding hop can do: read the body, forward with undici, pipe the answer back. */
async function startBareProxy(upstreamBase: string, key: string, dispatcher: Agent): Promise<Server> {
  const server = createServer({ noDelay: true }, (req, res) => {
    void (async () => {
      const parts: Buffer[] = [];
      for await (const part of req) parts.push(part as Buffer);
      const upstream = await request(upstreamBase + '/chat/completions', {
        dispatcher,
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: Buffer.concat(parts),
      });
      res.writeHead(upstream.statusCode, { 'content-type': String(upstream.headers['content-type']) });
      res.flushHeaders();
      for await (const chunk of upstream.body as AsyncIterable<Buffer>)
        if (!res.write(chunk)) await once(res, 'drain');
      res.end();
    })().catch(() => res.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

const cpuMs = (used: NodeJS.CpuUsage) => (used.user + used.system) / 1000;

export type GatewayPhase = 'small' | 'large' | 'abort';
const ALL_PHASES: readonly GatewayPhase[] = ['small', 'large', 'abort'];

/** `phases` picks what to measure (all by default), e.g. only 'large' while profiling the relay. */
export async function benchGateway(
  options: { phases?: readonly GatewayPhase[] } = {},
): Promise<Record<string, number | string>> {
  const phases = options.phases ?? ALL_PHASES;
  // Other work on the machine skews any hop; the load average says how busy it was.
  const loadAtStart = os.loadavg()[0] ?? 0;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-'));
  const cleanups: (() => Promise<unknown> | unknown)[] = [
    () => fs.rmSync(tmp, { recursive: true, force: true }),
  ];
  const cleanup = async () => {
    for (const fn of cleanups.reverse())
      await Promise.resolve()
        .then(fn)
        .catch(() => undefined);
  };

  try {
    const providerOptions: ProviderOptions = {
      apiKey: REAL_KEY,
      largeBytes: LARGE_BYTES,
      smallText: SHORT_REPLY,
    };
    const provider = forkWorker('bench-gateway-provider-worker.ts', [JSON.stringify(providerOptions)]);
    cleanups.push(() => stopWorker(provider, { op: 'close' }));
    const events = createMailbox<ProviderEvent>('provider event');
    listen(
      provider,
      providerEventSchema,
      'the provider worker',
      (e) => events.put(e.type === 'ready' ? 'ready' : `${e.type}/${e.tag}`, e),
      (e) => events.fail(e),
    );
    const ready = await events.take('ready');
    if (ready.type !== 'ready') throw new Error('the provider worker did not say ready');

    const client = forkWorker('bench-gateway-client-worker.ts', []);
    cleanups.push(() => stopWorker(client, { op: 'close' } satisfies ClientCommand));
    const results = createMailbox<ClientResult>('client result');
    listen(
      client,
      clientResultSchema,
      'the client worker',
      (r) =>
        // An error without an id answers no command: the client could not read what it was sent.
        r.kind === 'error' && r.id < 0
          ? results.fail(new Error(`client worker: ${r.message}`))
          : results.put(r.kind === 'ready' ? 'ready' : String(r.id), r),
      (e) => results.fail(e),
    );
    await results.take('ready');
    let nextId = 0;
    const call = async (cmd: Omit<ClientCommand & { op: 'stream' | 'abort' }, 'id'>) => {
      const id = nextId++;
      client.send({ ...cmd, id });
      const result = await results.take(String(id));
      if (result.kind === 'error') throw new Error(`client ${cmd.op} via ${cmd.url}: ${result.message}`);
      return result;
    };

    // The gateway as the host wires it: the SQLite usage store written behind the requests
    // (app/usage-settlements.ts), pino logger at info with the secret redactor. The group commits run on a
    // timer, inside whichever side's sample they land in: their CPU is also counted here and charged to
    // the gateway's requests (`small_cpu_ms_gateway_flush_per_request`).
    const store = openStore({ file: path.join(tmp, 'bench.db') });
    cleanups.push(() => store.close());
    const durable = createSqliteUsageStore(store.db);
    const flushes = { cpuMs: 0, rows: 0 };
    const usage = createWriteBehindUsageStore({
      durable: {
        ...durable,
        recordRows(rows) {
          const cpu = process.cpuUsage();
          durable.recordRows(rows);
          flushes.cpuMs += cpuMs(process.cpuUsage(cpu));
          flushes.rows += rows.length;
        },
      },
      clock: systemClock,
      onFlushError: (error) => {
        throw error;
      },
    });
    cleanups.push(() => usage.close());
    const logger = createLogger({
      level: 'info',
      redact: (line) => line.split(REAL_KEY).join('[redacted]'),
      destination: pino.destination({ dest: os.devNull, sync: true }),
    });
    // The fake model is free: unpriced, the cap would count it at the dearest known price and trip mid-bench.
    const gatewayConfig = gatewayConfigSchema.parse({
      prices: { 'fake-model': { input_per_mtok_usd: 0, output_per_mtok_usd: 0 } },
    });
    const gateway = createGateway({
      config: () => gatewayConfig,
      provider: providerConfigSchema.parse({ base_url: ready.baseUrl, model: 'fake-model' }),
      providerApiKey: REAL_KEY,
      usageStore: usage,
      clock: systemClock,
      timezone: () => 'UTC',
      logger: logger.child({ subsystem: 'gateway' }),
      maxOutputTokens: 4096,
    });
    await gateway.listen(['127.0.0.1']);
    cleanups.push(() => gateway.close());
    const run = gateway.issueKey({ runId: 'bench', groupId: 'bench' });

    const proxyDispatcher = new Agent({ keepAliveTimeout: 30_000 });
    cleanups.push(() => proxyDispatcher.destroy());
    const proxy = await startBareProxy(ready.baseUrl, REAL_KEY, proxyDispatcher);
    cleanups.push(
      () =>
        new Promise((resolve) => {
          proxy.close(resolve);
          proxy.closeAllConnections();
        }),
    );

    const targets: Record<Side, Target> = {
      direct: { url: ready.baseUrl, key: REAL_KEY },
      proxy: { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`, key: 'unused' },
      gateway: { url: gateway.baseUrlFor('127.0.0.1'), key: run.key },
    };
    let seq = 0;
    const stream = async (side: Side, kind: 'small' | 'large') => {
      const tag = `${kind}:${seq++}`;
      const cpu = process.cpuUsage();
      const result = await call({ op: 'stream', ...targets[side], tag });
      const gatewayProcessCpuMs = cpuMs(process.cpuUsage(cpu));
      if (result.kind !== 'stream' || result.status !== 200 || result.bytes === 0)
        throw new Error(`${kind} stream via ${side} failed: ${JSON.stringify(result)}`);
      const served = await events.take(`served/${tag}`);
      return {
        ...result,
        gatewayProcessCpuMs,
        providerCpuMs: served.type === 'served' ? served.cpuUs / 1000 : 0,
      };
    };

    const mib = 1024 * 1024;

    // Short streamed replies: TTFB and total time. Warm-up rounds are measured and thrown away.
    const smallPhase = async (): Promise<Record<string, number>> => {
      type Small = { ttfb: number; total: number; hopCpuMs: number };
      const small: Record<Side, Small[]> = { direct: [], proxy: [], gateway: [] };
      const pairedAdded: number[] = [];
      const pairedTtfbRatio: number[] = [];
      let flushCpuMs = 0;
      for (let i = 0; i < SMALL_WARMUP + SMALL_SAMPLES; i++) {
        if (i === SMALL_WARMUP) flushCpuMs = flushes.cpuMs;
        const round: Partial<Record<Side, Small>> = {};
        for (const side of ROTATIONS[i % 3]!) {
          const r = await stream(side, 'small');
          round[side] = { ttfb: r.ttfbMs, total: r.totalMs, hopCpuMs: r.gatewayProcessCpuMs };
        }
        if (i < SMALL_WARMUP) continue;
        for (const side of ['direct', 'proxy', 'gateway'] as const) small[side].push(round[side]!);
        pairedAdded.push(round.gateway!.total - round.direct!.total);
        pairedTtfbRatio.push(round.gateway!.ttfb / round.direct!.ttfb);
      }
      usage.flush();
      const flushPerRequest = (flushes.cpuMs - flushCpuMs) / SMALL_SAMPLES;
      const med = (side: Side, pick: (s: Small) => number) => median(small[side].map(pick));
      const gatewayCpu =
        med('gateway', (s) => s.hopCpuMs) - med('direct', (s) => s.hopCpuMs) + flushPerRequest;
      const proxyCpu = med('proxy', (s) => s.hopCpuMs) - med('direct', (s) => s.hopCpuMs);
      const ttfb = (side: Side) => med(side, (s) => s.ttfb);
      const total = (side: Side) => med(side, (s) => s.total);
      return {
        small_stream_samples: SMALL_SAMPLES,
        ttfb_direct_ms: round(ttfb('direct')),
        ttfb_gateway_ms: round(ttfb('gateway')),
        ttfb_bare_proxy_ms: round(ttfb('proxy')),
        'ttfb_ratio (goal <= 1.05)': round(ttfb('gateway') / ttfb('direct'), 2),
        ttfb_ratio_paired_median: round(median(pairedTtfbRatio), 2),
        ttfb_added_ms: round(ttfb('gateway') - ttfb('direct')),
        ttfb_ratio_vs_bare_proxy: round(ttfb('gateway') / ttfb('proxy'), 2),
        total_direct_p50_ms: round(total('direct')),
        total_gateway_p50_ms: round(total('gateway')),
        total_bare_proxy_p50_ms: round(total('proxy')),
        total_gateway_p90_ms: round(
          percentile(
            small.gateway.map((s) => s.total),
            90,
          ),
        ),
        'added_p50_ms (goal < 2)': round(total('gateway') - total('direct')),
        added_paired_median_ms: round(median(pairedAdded)),
        added_p50_vs_bare_proxy_ms: round(total('gateway') - total('proxy')),
        // CPU of this process per request beyond what the direct side costs it (the IPC to the client).
        // The group commits' share included (they run on a timer, outside the requests' samples).
        small_cpu_ms_gateway_per_request: round(gatewayCpu),
        small_cpu_ms_gateway_flush_per_request: round(flushPerRequest, 4),
        small_cpu_ms_bare_proxy_per_request: round(proxyCpu),
        'small_cpu_ratio_vs_bare_proxy (goal <= 1.2)': round(gatewayCpu / proxyCpu, 2),
      };
    };

    // Large streams: throughput, and the CPU each process spent on one.
    const largePhase = async (): Promise<Record<string, number>> => {
      type Large = {
        bytesPerS: number;
        clientCpuMs: number;
        providerCpuMs: number;
        gatewayProcessCpuMs: number;
        wallMs: number;
      };
      const large: Record<Side, Large[]> = { direct: [], proxy: [], gateway: [] };
      for (let i = 0; i < LARGE_WARMUP + LARGE_SAMPLES; i++) {
        for (const side of ROTATIONS[i % 3]!) {
          const r = await stream(side, 'large');
          if (i < LARGE_WARMUP) continue;
          large[side].push({
            bytesPerS: r.bytes / (r.totalMs / 1000),
            clientCpuMs: r.cpuUs / 1000,
            providerCpuMs: r.providerCpuMs,
            gatewayProcessCpuMs: r.gatewayProcessCpuMs,
            wallMs: r.totalMs,
          });
        }
      }
      const lmed = (side: Side, pick: (l: Large) => number) => median(large[side].map(pick));
      const rate = (side: Side) => lmed(side, (l) => l.bytesPerS);
      // CPU seconds per wall second summed over the three processes: near the core count means the
      // machine, not any one process, limits the stream.
      const cores = (side: Side) =>
        lmed(side, (l) => (l.clientCpuMs + l.providerCpuMs + l.gatewayProcessCpuMs) / l.wallMs);
      return {
        large_stream_mib: LARGE_BYTES / mib,
        large_stream_samples: LARGE_SAMPLES,
        throughput_direct_mib_s: round(rate('direct') / mib, 1),
        throughput_gateway_mib_s: round(rate('gateway') / mib, 1),
        throughput_bare_proxy_mib_s: round(rate('proxy') / mib, 1),
        'throughput_ratio (goal >= 0.95)': round(rate('gateway') / rate('direct'), 2),
        throughput_ratio_vs_bare_proxy: round(rate('gateway') / rate('proxy'), 2),
        large_cpu_ms_client_direct: round(
          lmed('direct', (l) => l.clientCpuMs),
          1,
        ),
        large_cpu_ms_client_gateway: round(
          lmed('gateway', (l) => l.clientCpuMs),
          1,
        ),
        large_cpu_ms_provider_direct: round(
          lmed('direct', (l) => l.providerCpuMs),
          1,
        ),
        large_cpu_ms_provider_gateway: round(
          lmed('gateway', (l) => l.providerCpuMs),
          1,
        ),
        large_cpu_ms_gateway_process: round(
          lmed('gateway', (l) => l.gatewayProcessCpuMs),
          1,
        ),
        large_cpu_ms_bare_proxy_process: round(
          lmed('proxy', (l) => l.gatewayProcessCpuMs),
          1,
        ),
        large_cores_busy_direct: round(cores('direct'), 2),
        large_cores_busy_gateway: round(cores('gateway'), 2),
      };
    };

    // Abort propagation: the client aborts after the first content chunk; the provider process notes the
    // close. The bare proxy is left out: it does not abort its upstream request.
    const abortPhase = async (): Promise<Record<string, number>> => {
      const aborts: Record<'direct' | 'gateway', number[]> = { direct: [], gateway: [] };
      for (let i = 0; i < ABORT_WARMUP + ABORT_SAMPLES; i++) {
        for (const side of i % 2 ? (['gateway', 'direct'] as const) : (['direct', 'gateway'] as const)) {
          const tag = `park:${seq++}`;
          const result = await call({ op: 'abort', ...targets[side], tag });
          const seen = await events.take(`aborted/${tag}`, 5_000);
          if (result.kind !== 'abort' || seen.type !== 'aborted') throw new Error('unexpected abort answer');
          await events.take(`served/${tag}`);
          if (i >= ABORT_WARMUP) aborts[side].push(seen.atMs - result.abortedAtMs);
        }
      }
      return {
        abort_samples: ABORT_SAMPLES,
        abort_propagation_direct_ms: round(median(aborts.direct)),
        'abort_propagation_gateway_ms (goal < 50)': round(median(aborts.gateway)),
        abort_propagation_gateway_p90_ms: round(percentile(aborts.gateway, 90)),
      };
    };

    const figures: Record<string, number | string> = {
      cpus: os.cpus().length,
      load_avg_1m_at_start: round(loadAtStart, 2),
    };
    if (phases.includes('small')) Object.assign(figures, await smallPhase());
    if (phases.includes('large')) Object.assign(figures, await largePhase());
    if (phases.includes('abort')) Object.assign(figures, await abortPhase());
    figures.load_avg_1m_at_end = round(os.loadavg()[0] ?? 0, 2);
    return figures;
  } finally {
    await cleanup();
  }
}

if (isMain(import.meta.url)) {
  // Optional arguments name the phases to run: `bench-gateway.ts large`.
  const asked = process.argv.slice(2).filter((a): a is GatewayPhase => (ALL_PHASES as string[]).includes(a));
  printFigures(
    'gateway overhead (vs. calling the fake provider directly)',
    await benchGateway(asked.length > 0 ? { phases: asked } : {}),
  );
}
