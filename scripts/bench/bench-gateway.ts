/**
 * The gateway's cost on the LLM path, measured against the same fake provider called directly in the
 * same run: time to first byte and total latency of a short streamed reply, throughput of a large stream,
 * and how fast a client abort reaches the provider. Client, gateway and fake share one event loop, so
 * any extra HTTP hop roughly halves throughput here; a bare undici pass-through proxy is measured too, to
 * separate the cost of the hop from the cost of the gateway's own work (auth, accounting, SSE framing).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { gatewayConfigSchema, providerConfigSchema } from '../../host/gateway/config.ts';
import { createGateway } from '../../host/gateway/gateway.ts';
import { reply, startFakeProvider, type FakeProvider } from '../../test/fakes/fake-provider.ts';
import { createMemoryUsageStore } from '../../test/fakes/memory-usage-store.ts';
import { isMain, median, printFigures, round } from './stats.ts';

const SMALL_SAMPLES = 40;
const LARGE_SAMPLES = 6;
const ABORT_SAMPLES = 20;
const WARMUP = 5;
const LARGE_BYTES = 8 * 1024 * 1024;
const REAL_KEY = 'sk-bench-provider-key';
const SHORT_REPLY =
  'The quick brown fox jumps over the lazy dog and keeps on running through the field until dusk.';

interface Target {
  url: string;
  key: string;
}

interface Timing {
  ttfbMs: number;
  totalMs: number;
  bytes: number;
}

const silent = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

function chatRequest(target: Target, dispatcher: Agent, signal?: AbortSignal) {
  return request(`${target.url}/chat/completions`, {
    dispatcher,
    method: 'POST',
    signal,
    headers: { authorization: `Bearer ${target.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'go' }] }),
  });
}

async function timedStream(target: Target, dispatcher: Agent): Promise<Timing> {
  const start = performance.now();
  const response = await chatRequest(target, dispatcher);
  let ttfb = 0;
  let bytes = 0;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    if (bytes === 0) ttfb = performance.now() - start;
    bytes += chunk.length;
  }
  if (response.statusCode !== 200) throw new Error(`bench request failed with HTTP ${response.statusCode}`);
  return { ttfbMs: ttfb, totalMs: performance.now() - start, bytes };
}

/** Reads the first chunk of a parked stream, aborts, and waits until the provider sees the abort. */
async function abortLatency(fake: FakeProvider, target: Target, dispatcher: Agent): Promise<number> {
  fake.script(
    reply.text('', { chunks: ['a', 'b'], pauseAfterChunks: 1, resume: new Promise(() => undefined) }),
  );
  const before = fake.requests.length;
  const controller = new AbortController();
  const response = await chatRequest(target, dispatcher, controller.signal);
  const iterator = (response.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  let seen = '';
  while (!seen.includes('"a"')) {
    const next = await iterator.next();
    if (next.done) throw new Error('stream ended before the first content chunk');
    seen += next.value.toString();
  }
  // A first chunk arrived, so the provider has this request; it is the one after `before`.
  const upstream = (await fake.waitForRequests(before + 1))[before]!;
  const abortedAt = performance.now();
  controller.abort();
  const seenAt = await fake.waitForAbort(upstream);
  return seenAt - abortedAt;
}

/** The least a forwarding hop can do: read the body, forward with undici, pipe the answer back. */
async function startBareProxy(upstreamBase: string, key: string, dispatcher: Agent): Promise<Server> {
  const server = createServer((req, res) => {
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
      for await (const chunk of upstream.body as AsyncIterable<Buffer>) res.write(chunk);
      res.end();
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

export async function benchGateway(): Promise<Record<string, number | string>> {
  const fake = await startFakeProvider({ apiKey: REAL_KEY });
  const gateway = createGateway({
    config: gatewayConfigSchema.parse({}),
    provider: providerConfigSchema.parse({ base_url: fake.openaiBaseUrl, model: 'fake-model' }),
    providerApiKey: REAL_KEY,
    usageStore: createMemoryUsageStore(),
    clock: { now: () => Date.now() },
    timezone: 'UTC',
    logger: silent,
    onSpendCapReached: () => undefined,
  });
  await gateway.listen(['127.0.0.1']);
  const run = gateway.issueKey({ runId: 'bench', groupId: 'bench' });
  const direct: Target = { url: fake.openaiBaseUrl, key: REAL_KEY };
  const viaGateway: Target = { url: gateway.baseUrlFor('127.0.0.1'), key: run.key };
  const dispatcher = new Agent({ keepAliveTimeout: 30_000 });
  const proxyDispatcher = new Agent({ keepAliveTimeout: 30_000 });
  const proxy = await startBareProxy(fake.openaiBaseUrl, REAL_KEY, proxyDispatcher);
  const viaProxy: Target = {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`,
    key: 'unused',
  };
  type Side = 'direct' | 'proxy' | 'gateway';
  const targets: Record<Side, Target> = { direct, proxy: viaProxy, gateway: viaGateway };
  const rotations: Side[][] = [
    ['direct', 'proxy', 'gateway'],
    ['gateway', 'direct', 'proxy'],
    ['proxy', 'gateway', 'direct'],
  ];

  try {
    const small: Record<Side, Timing[]> = { direct: [], proxy: [], gateway: [] };
    for (let i = 0; i < WARMUP + SMALL_SAMPLES; i++) {
      // Rotate the order so drift (GC, JIT, CPU frequency) hits every side alike.
      for (const side of rotations[i % 3]!) {
        fake.script(reply.text(SHORT_REPLY));
        const timing = await timedStream(targets[side], dispatcher);
        if (i >= WARMUP) small[side].push(timing);
      }
    }

    const bigText = 'x'.repeat(LARGE_BYTES);
    const large: Record<Side, number[]> = { direct: [], proxy: [], gateway: [] };
    for (let i = 0; i < 1 + LARGE_SAMPLES; i++) {
      for (const side of rotations[i % 3]!) {
        fake.script(reply.text(bigText, { chunkSize: 8192 }));
        const timing = await timedStream(targets[side], dispatcher);
        if (i >= 1) large[side].push(timing.bytes / (timing.totalMs / 1000));
      }
    }

    const aborts = { direct: [] as number[], gateway: [] as number[] };
    for (let i = 0; i < 2 + ABORT_SAMPLES; i++) {
      for (const side of ['direct', 'gateway'] as const) {
        const ms = await abortLatency(fake, side === 'direct' ? direct : viaGateway, dispatcher);
        if (i >= 2) aborts[side].push(ms);
      }
    }

    const ttfb = (side: Side) => median(small[side].map((t) => t.ttfbMs));
    const total = (side: Side) => median(small[side].map((t) => t.totalMs));
    return {
      small_stream_samples: SMALL_SAMPLES,
      ttfb_direct_ms: round(ttfb('direct')),
      ttfb_gateway_ms: round(ttfb('gateway')),
      ttfb_bare_proxy_ms: round(ttfb('proxy')),
      ttfb_ratio: round(ttfb('gateway') / ttfb('direct'), 2),
      ttfb_ratio_vs_bare_proxy: round(ttfb('gateway') / ttfb('proxy'), 2),
      total_direct_p50_ms: round(total('direct')),
      total_gateway_p50_ms: round(total('gateway')),
      total_bare_proxy_p50_ms: round(total('proxy')),
      added_p50_ms: round(total('gateway') - total('direct')),
      added_p50_vs_bare_proxy_ms: round(total('gateway') - total('proxy')),
      large_stream_mib: LARGE_BYTES / (1024 * 1024),
      throughput_direct_mib_s: round(median(large.direct) / (1024 * 1024), 1),
      throughput_gateway_mib_s: round(median(large.gateway) / (1024 * 1024), 1),
      throughput_bare_proxy_mib_s: round(median(large.proxy) / (1024 * 1024), 1),
      throughput_ratio: round(median(large.gateway) / median(large.direct), 2),
      throughput_ratio_vs_bare_proxy: round(median(large.gateway) / median(large.proxy), 2),
      abort_propagation_direct_ms: round(median(aborts.direct)),
      abort_propagation_ms: round(median(aborts.gateway)),
      abort_propagation_ratio: round(median(aborts.gateway) / median(aborts.direct), 2),
    };
  } finally {
    await dispatcher.destroy();
    await new Promise((resolve) => proxy.close(resolve));
    proxy.closeAllConnections();
    await proxyDispatcher.destroy();
    await gateway.close();
    await fake.close();
  }
}

if (isMain(import.meta.url))
  printFigures('gateway overhead (vs. calling the fake provider directly)', await benchGateway());
