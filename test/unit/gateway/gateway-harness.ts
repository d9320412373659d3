import { request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import OpenAI from 'openai';
import { createGateway, type Gateway } from '../../../host/gateway/gateway.ts';
import { gatewayConfigSchema, providerConfigSchema } from '../../../host/gateway/config.ts';
import type { IssuedKey } from '../../../host/gateway/key-registry.ts';
import type { LogLevels } from '../../../host/logging/logger.ts';
import type { UsageStore } from '../../../host/gateway/spend/usage-store.ts';
import { startFakeProvider, type FakeProvider } from '../../fakes/fake-provider.ts';
import { createMemoryUsageStore } from '../../fakes/memory-usage-store.ts';
import { fakeClock, type FakeClock } from '../../helpers/fake-clock.ts';
import type { Clock } from '../../../host/time/clock.ts';

export const REAL_KEY = 'sk-real-provider-key-0123456789abcdef';
/** 2024-03-10 23:30 UTC is already 2024-03-11 in Berlin. */
export const FIXED_NOW = Date.UTC(2024, 2, 10, 23, 30);
export const BERLIN_DAY = '2024-03-11';

export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: object;
  msg: string;
}

export interface Harness {
  fake: FakeProvider;
  gateway: Gateway;
  run: IssuedKey;
  /** OpenAI SDK pointed at the gateway with the run's key, no SDK retries. */
  client: OpenAI;
  baseUrl: string;
  port: number;
  logs: LogEntry[];
  /** Delays the gateway asked to sleep between retries (the harness does not actually wait). */
  sleeps: number[];
  /** The groups the gateway warned the owner about (80 % of the cap, or past it), in order. */
  warnings: string[];
  /** What the gateway told the host about the run's provider calls, in order. */
  upstreamEvents: string[];
  usageStore: UsageStore;
  /** The gateway's clock unless the test passed its own: stopped at FIXED_NOW, moved only by the test. */
  time: FakeClock;
  /** Replaces the [gateway] settings the running gateway reads, as a config reload does. */
  reconfigure(gateway: Record<string, unknown>): void;
  close(): Promise<void>;
}

export interface HarnessOptions {
  gateway?: Record<string, unknown>;
  provider?: Record<string, unknown>;
  usageStore?: UsageStore;
  providerApiKey?: string;
  /** The gateway's clock; by default `time`, a fake one stopped at FIXED_NOW. */
  clock?: Clock;
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const fake = await startFakeProvider({ apiKey: REAL_KEY });
  const kind = options.provider?.kind === 'anthropic' ? 'anthropic' : 'openai';
  let config = gatewayConfigSchema.parse({ retry_base_ms: 1, ...options.gateway });
  const provider = providerConfigSchema.parse({
    base_url: kind === 'anthropic' ? fake.url : fake.openaiBaseUrl,
    model: 'fake-model',
    ...options.provider,
  });
  const logs: LogEntry[] = [];
  const logger: LogLevels = {
    debug: (obj, msg) => logs.push({ level: 'debug', obj, msg }),
    info: (obj, msg) => logs.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => logs.push({ level: 'warn', obj, msg }),
    error: (obj, msg) => logs.push({ level: 'error', obj, msg }),
  };
  const sleeps: number[] = [];
  const warnings: string[] = [];
  const upstreamEvents: string[] = [];
  const usageStore = options.usageStore ?? createMemoryUsageStore();
  const time = fakeClock(FIXED_NOW);
  const gateway = createGateway({
    config: () => config,
    provider,
    providerApiKey: options.providerApiKey ?? REAL_KEY,
    usageStore,
    clock: options.clock ?? time.clock,
    timezone: () => 'Europe/Berlin',
    logger,
    maxOutputTokens: 4096,
    onSpendWarning: (groupId) => warnings.push(groupId),
    upstreamEvents: {
      authRejected: (owner, status) => upstreamEvents.push(`authRejected ${owner.runId} ${status}`),
      slow: (owner, waitedMs) => upstreamEvents.push(`slow ${owner.runId} ${waitedMs}`),
      spendCapRefused: (owner) => upstreamEvents.push(`spendCapRefused ${owner.runId}`),
      providerTimedOut: (owner, message) => upstreamEvents.push(`providerTimedOut ${owner.runId} ${message}`),
    },
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
  const { port } = await gateway.listen(['127.0.0.1']);
  const run = gateway.issueKey({ runId: 'run-1', groupId: 'group-a' });
  const baseUrl = gateway.baseUrlFor('127.0.0.1');
  const client = new OpenAI({ apiKey: run.key, baseURL: baseUrl, maxRetries: 0 });
  return {
    fake,
    gateway,
    run,
    client,
    baseUrl,
    port,
    logs,
    sleeps,
    warnings,
    upstreamEvents,
    usageStore,
    time,
    reconfigure(gateway) {
      config = gatewayConfigSchema.parse({ retry_base_ms: 1, ...gateway });
    },
    async close() {
      await gateway.close();
      await fake.close();
    },
  };
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json(): unknown;
}

/** A plain node:http request, which (unlike fetch) may send hop-by-hop and proxy headers. */
export function rawRequest(
  port: number,
  options: {
    method?: string;
    path: string;
    headers?: OutgoingHttpHeaders;
    body?: string | Buffer;
    chunked?: boolean;
  },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'POST',
        path: options.path,
        headers: options.headers,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (chunk: Buffer) => parts.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            json: () => JSON.parse(text) as unknown,
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.body !== undefined) {
      if (options.chunked) {
        const body = Buffer.from(options.body);
        const half = Math.floor(body.length / 2);
        req.write(body.subarray(0, half));
        req.end(body.subarray(half));
      } else req.end(options.body);
    } else req.end();
  });
}

export function jsonHeaders(key: string, extra: OutgoingHttpHeaders = {}): OutgoingHttpHeaders {
  return { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...extra };
}

export const chatBody = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], ...extra });
