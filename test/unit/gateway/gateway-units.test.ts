import { once } from 'node:events';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { mentionsUsageObject } from '../../../host/gateway/proxy/usage-tap.ts';
import { validateBindAddresses } from '../../../host/gateway/bind-address.ts';
import {
  allowedModels,
  gatewayConfigSchema,
  providerConfigSchema,
  upstreamApiBase,
} from '../../../host/gateway/config.ts';
import { createDayFormatter } from '../../../host/gateway/spend/day.ts';
import { createGateway } from '../../../host/gateway/gateway.ts';
import { gatewayKeyFrom, upstreamRequestHeaders } from '../../../host/gateway/proxy/headers.ts';
import { createKeyRegistry } from '../../../host/gateway/key-registry.ts';
import { costMicros } from '../../../host/gateway/spend/pricing.ts';
import { PRICES_AS_OF } from '../../../host/gateway/spend/price-table.ts';
import {
  isRetryableStatus,
  retryAfterMs,
  UPSTREAM_RETRY_JITTER,
} from '../../../host/gateway/proxy/retry-policy.ts';
import { backoffMs } from '../../../host/time/backoff.ts';
import { createSseFramer, parseSseEvent, type SseEvent } from '../../../host/gateway/proxy/sse.ts';
import { usageFromPayload } from '../../../host/gateway/spend/usage-extract.ts';
import { createUsageTap } from '../../../host/gateway/proxy/usage-tap.ts';
import { createMemoryUsageStore } from '../../fakes/memory-usage-store.ts';
import { systemClock } from '../../../host/time/clock.ts';

const silent = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

function makeGateway(port = 0) {
  return createGateway({
    config: () => gatewayConfigSchema.parse({ port }),
    provider: providerConfigSchema.parse({}),
    providerApiKey: 'sk-x',
    usageStore: createMemoryUsageStore(),
    clock: systemClock,
    timezone: () => 'UTC',
    logger: silent,
    maxOutputTokens: 4096,
  });
}

describe('gateway config', () => {
  it('accepts empty sections with defaults and rejects unknown keys', () => {
    const gateway = gatewayConfigSchema.parse({});
    expect(gateway).toMatchObject({
      port: 0,
      max_request_bytes: 4 * 1024 * 1024,
      daily_cap_usd: 5,
      group_caps_usd: {},
      prices: {},
    });
    expect(gateway.allowed_models).toBeUndefined();
    expect(() => gatewayConfigSchema.parse({ max_request_byte: 1 })).toThrow(/max_request_byte/);
    expect(providerConfigSchema.parse({})).toEqual({
      kind: 'openai',
      base_url: 'https://api.openai.com/v1',
      api_key_env: 'OPENAI_API_KEY',
      model: 'gpt-4.1-mini',
      fallback_models: [],
    });
    expect(() => providerConfigSchema.parse({ kind: 'openai', api_key: 'sk-inline' })).toThrow(/api_key/);
    expect(() => providerConfigSchema.parse({ base_url: 'ftp://example.com' })).toThrow(/http/);
  });

  it('derives provider defaults from the kind and maps base URLs to the /v1 API root', () => {
    const anthropic = providerConfigSchema.parse({ kind: 'anthropic' });
    expect(anthropic).toMatchObject({
      base_url: 'https://api.anthropic.com',
      api_key_env: 'ANTHROPIC_API_KEY',
    });
    expect(upstreamApiBase(anthropic)).toBe('https://api.anthropic.com/v1');
    expect(
      upstreamApiBase(
        providerConfigSchema.parse({ kind: 'anthropic', base_url: 'https://proxy.example/v1/' }),
      ),
    ).toBe('https://proxy.example/v1');
    expect(upstreamApiBase(providerConfigSchema.parse({ base_url: 'https://openrouter.ai/api/v1/' }))).toBe(
      'https://openrouter.ai/api/v1',
    );
    expect(upstreamApiBase(providerConfigSchema.parse({ base_url: 'http://localhost:11434/v1' }))).toBe(
      'http://localhost:11434/v1',
    );
  });

  it('allows the provider model and fallbacks, plus any configured extras', () => {
    const provider = providerConfigSchema.parse({ model: 'main', fallback_models: ['backup'] });
    expect([...allowedModels(gatewayConfigSchema.parse({}), provider)]).toEqual(['main', 'backup']);
    expect(
      [...allowedModels(gatewayConfigSchema.parse({ allowed_models: ['extra'] }), provider)].sort(),
    ).toEqual(['backup', 'extra', 'main']);
  });
});

describe('gateway binding', () => {
  it('refuses wildcard addresses, host names and an empty list', () => {
    for (const address of ['0.0.0.0', '::', '0:0:0:0:0:0:0:0', '[::]', '::ffff:0.0.0.0', '0.1.2.3']) {
      expect(() => validateBindAddresses([address]), address).toThrow(/refuses to bind/);
    }
    expect(() => validateBindAddresses(['localhost'])).toThrow(/IP address/);
    expect(() => validateBindAddresses([])).toThrow(/at least one address/);
    expect(validateBindAddresses(['127.0.0.1', '172.17.0.1', '127.0.0.1', '::1'])).toEqual([
      '127.0.0.1',
      '172.17.0.1',
      '::1',
    ]);
  });

  it('listen() rejects 0.0.0.0 and binds several addresses on one port', async () => {
    const refusing = makeGateway();
    await expect(refusing.listen(['127.0.0.1', '0.0.0.0'])).rejects.toThrow(/0\.0\.0\.0/);
    expect(refusing.port).toBeUndefined();
    await refusing.close();

    const gateway = makeGateway();
    const { port, addresses } = await gateway.listen(['127.0.0.1', '127.0.0.2']);
    try {
      expect(addresses).toEqual(['127.0.0.1', '127.0.0.2']);
      for (const address of addresses) {
        const res = await fetch(`http://${address}:${port}/v1/models`);
        expect(res.status, address).toBe(401);
      }
      expect(gateway.baseUrlFor('127.0.0.2')).toBe(`http://127.0.0.2:${port}/v1`);
      expect(gateway.baseUrlFor('::1')).toBe(`http://[::1]:${port}/v1`);
    } finally {
      await gateway.close();
    }
  });

  it('fails clearly and unbinds everything when the port is taken on a later address', async () => {
    const blocker = createServer();
    blocker.listen(0, '127.0.0.2');
    await once(blocker, 'listening');
    const port = (blocker.address() as { port: number }).port;
    const gateway = makeGateway(port);
    try {
      await expect(gateway.listen(['127.0.0.1', '127.0.0.2'])).rejects.toThrow(
        /cannot listen on 127\.0\.0\.2/,
      );
      // 127.0.0.1 was released again: binding it now works.
      const probe = createServer();
      probe.listen(port, '127.0.0.1');
      await once(probe, 'listening');
      probe.close();
    } finally {
      blocker.close();
      await gateway.close();
    }
  });
});

describe('gateway keys', () => {
  it('issues 256-bit gw- keys and verifies only live ones', () => {
    const registry = createKeyRegistry();
    const a = registry.issue({ runId: 'r1', groupId: 'g1' });
    const b = registry.issue({ runId: 'r2', groupId: 'g2' });
    expect(Buffer.from(a.key.slice(3), 'base64url')).toHaveLength(32);
    expect(registry.verify(a.key)).toEqual({ runId: 'r1', groupId: 'g1' });
    expect(registry.verify(b.key)).toEqual({ runId: 'r2', groupId: 'g2' });
    expect(registry.verify(a.key.slice(0, -1))).toBeUndefined();
    expect(registry.verify('')).toBeUndefined();
    expect(registry.verify(undefined)).toBeUndefined();
    a.revoke();
    a.revoke();
    expect(registry.verify(a.key)).toBeUndefined();
    expect(registry.verify(b.key)).toBeDefined();
    expect(registry.size).toBe(1);
  });

  it('never gives two live runs the same key: a repeated draw is drawn again, a stuck random source refused', () => {
    const draws = [Buffer.alloc(32, 1), Buffer.alloc(32, 1), Buffer.alloc(32, 2)];
    const registry = createKeyRegistry(() => draws.shift() ?? Buffer.alloc(32, 1));
    const a = registry.issue({ runId: 'r1', groupId: 'g1' });
    const b = registry.issue({ runId: 'r2', groupId: 'g2' });
    expect(b.key).not.toBe(a.key);
    expect(registry.verify(a.key)).toEqual({ runId: 'r1', groupId: 'g1' });
    expect(registry.verify(b.key)).toEqual({ runId: 'r2', groupId: 'g2' });
    expect(() => registry.issue({ runId: 'r3', groupId: 'g3' })).toThrow(/not random/);
    expect(registry.size).toBe(2);
  });

  it('reads the key from a bearer header or x-api-key, and a non-bearer authorization wins over x-api-key', () => {
    expect(gatewayKeyFrom({ authorization: 'Bearer gw-abc' })).toBe('gw-abc');
    expect(gatewayKeyFrom({ 'x-api-key': 'gw-abc' })).toBe('gw-abc');
    expect(gatewayKeyFrom({ authorization: 'Basic gw-abc', 'x-api-key': 'gw-abc' })).toBeUndefined();
  });

  it('injects the provider key per kind and forwards only allowlisted client headers', () => {
    const client = {
      authorization: 'Bearer gw-1',
      'x-api-key': 'gw-1',
      'content-type': 'application/json',
      'anthropic-beta': 'x',
      host: 'h',
    };
    expect(
      upstreamRequestHeaders(client, { kind: 'openai', apiKey: 'sk-real', anthropicAuth: 'bearer' }),
    ).toEqual({
      // anthropic-beta is dropped: beta flags switch on tools that run on the provider's side.
      'content-type': 'application/json',
      'accept-encoding': 'identity',
      'user-agent': 'carapace-gateway',
      authorization: 'Bearer sk-real',
    });
    const anthropic = upstreamRequestHeaders(client, {
      kind: 'anthropic',
      apiKey: 'sk-ant',
      anthropicAuth: 'x-api-key',
    });
    expect(anthropic).toMatchObject({ 'x-api-key': 'sk-ant', 'anthropic-version': '2023-06-01' });
    expect(anthropic.authorization).toBeUndefined();
    const compat = upstreamRequestHeaders(client, {
      kind: 'anthropic',
      apiKey: 'sk-ant',
      anthropicAuth: 'bearer',
    });
    expect(compat.authorization).toBe('Bearer sk-ant');
    expect(compat['x-api-key']).toBeUndefined();
    expect(
      upstreamRequestHeaders(client, { kind: 'openai', apiKey: '', anthropicAuth: 'bearer' }).authorization,
    ).toBeUndefined();
  });
});

describe('gateway retry policy', () => {
  it('reads retry-after-ms, seconds and HTTP dates', () => {
    const now = Date.UTC(2024, 0, 1, 0, 0, 0);
    expect(retryAfterMs({ 'retry-after': '2' }, now)).toBe(2000);
    expect(retryAfterMs({ 'retry-after': '0.5' }, now)).toBe(500);
    expect(retryAfterMs({ 'retry-after-ms': '250', 'retry-after': '9' }, now)).toBe(250);
    expect(retryAfterMs({ 'retry-after': new Date(now + 4000).toUTCString() }, now)).toBe(4000);
    expect(retryAfterMs({ 'retry-after': 'soon' }, now)).toBeUndefined();
    expect(retryAfterMs({}, now)).toBeUndefined();
  });

  it('retries 429 and 5xx only, with growing backoff', () => {
    expect([429, 500, 502, 503, 529].every(isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 413, 422].some(isRetryableStatus)).toBe(false);
    const upstream = (random: () => number) => ({ baseMs: 100, jitter: UPSTREAM_RETRY_JITTER, random });
    expect(
      backoffMs(
        0,
        upstream(() => 0.5),
      ),
    ).toBe(100);
    expect(
      backoffMs(
        3,
        upstream(() => 0.5),
      ),
    ).toBe(800);
    expect(
      backoffMs(
        1,
        upstream(() => 0),
      ),
    ).toBe(150);
    expect(backoffMs(40, { baseMs: 100, maxMs: 5_000 })).toBe(5_000);
    expect(backoffMs(-1, { baseMs: 100 })).toBe(100);
  });
});

describe('gateway usage parsing', () => {
  it('splits SSE events cut at any byte, with LF or CRLF line ends', () => {
    const text = 'event: a\r\ndata: {"x":1}\r\n\r\n: comment\n\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n';
    for (let cut = 1; cut < text.length; cut++) {
      const events: SseEvent[] = [];
      const framer = createSseFramer((event) => events.push(parseSseEvent(event.toString('utf8'))));
      framer.push(Buffer.from(text.slice(0, cut)));
      framer.push(Buffer.from(text.slice(cut)));
      framer.end();
      expect(events.map((event) => [event.event, event.data])).toEqual([
        ['a', '{"x":1}'],
        [undefined, ''],
        [undefined, 'line1\nline2'],
        [undefined, '[DONE]'],
      ]);
      expect(events.map((event) => event.raw).join('')).toBe(text);
    }
  });

  it('frames SSE bytes into whole events wherever the chunks are cut', () => {
    const text = 'data: {"a":1}\n\nevent: x\r\ndata: {"b":"\u00e9\u00e9"}\r\n\r\ndata: tail-without-end';
    const bytes = Buffer.from(text);
    const expected = [
      'data: {"a":1}\n\n',
      'event: x\r\ndata: {"b":"\u00e9\u00e9"}\r\n\r\n',
      'data: tail-without-end',
    ];
    for (let first = 1; first < bytes.length; first++) {
      for (const second of [first + 1, first + 3, bytes.length]) {
        const events: string[] = [];
        const framer = createSseFramer((event) => events.push(event.toString('utf8')));
        framer.push(bytes.subarray(0, first));
        framer.push(bytes.subarray(first, Math.min(second, bytes.length)));
        framer.push(bytes.subarray(Math.min(second, bytes.length)));
        framer.end();
        expect(events, `cut at ${first}/${second}`).toEqual(expected);
      }
    }
    const capped: number[] = [];
    const small = createSseFramer((event) => capped.push(event.length), 8);
    small.push(Buffer.from('data: 0123456789'));
    expect(capped).toEqual([16]);
  });

  it('finds usage in every supported response shape', () => {
    expect(usageFromPayload({ usage: { prompt_tokens: 3, completion_tokens: 4 } })).toEqual({
      promptTokens: 3,
      completionTokens: 4,
    });
    expect(
      usageFromPayload({
        type: 'response.completed',
        response: { usage: { input_tokens: 5, output_tokens: 6 } },
      }),
    ).toEqual({
      promptTokens: 5,
      completionTokens: 6,
    });
    expect(
      usageFromPayload({
        type: 'message_start',
        message: { usage: { input_tokens: 10, cache_read_input_tokens: 90, output_tokens: 1 } },
      }),
    ).toEqual({ promptTokens: 100, completionTokens: 1 });
    expect(usageFromPayload({ type: 'message_delta', usage: { output_tokens: 42 } })).toEqual({
      completionTokens: 42,
    });
    expect(usageFromPayload({ usage: null, choices: [] })).toBeUndefined();
    // OpenRouter adds what it billed.
    expect(usageFromPayload({ usage: { prompt_tokens: 3, completion_tokens: 4, cost: 0.0021 } })).toEqual({
      promptTokens: 3,
      completionTokens: 4,
      costUsd: 0.0021,
    });
  });

  it('taps SSE usage (last report wins) and strips only the usage-only chunk when asked', () => {
    const body =
      'data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}\n\n' +
      'data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}\n\n' +
      'data: [DONE]\n\n';
    const tap = createUsageTap({
      contentType: 'text/event-stream; charset=utf-8',
      stripUsageOnlyChunks: true,
      maxJsonBytes: 1000,
    });
    const out: string[] = [];
    for (let i = 0; i < body.length; i += 7)
      out.push(Buffer.concat(tap.chunk(Buffer.from(body.slice(i, i + 7)))).toString());
    const end = tap.finish();
    out.push(Buffer.concat(end.tail).toString());
    expect(out.join('')).toBe(
      'data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}\n\ndata: [DONE]\n\n',
    );
    expect(end.usage).toEqual({ promptTokens: 7, completionTokens: 2 });

    const anthropic = createUsageTap({
      contentType: 'text/event-stream',
      stripUsageOnlyChunks: false,
      maxJsonBytes: 1000,
    });
    const events =
      'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":12,"output_tokens":1}}}\n\n' +
      'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":30}}\n\n';
    const chunk = Buffer.from(events);
    expect(anthropic.chunk(chunk)[0]).toBe(chunk);
    expect(anthropic.finish().usage).toEqual({ promptTokens: 12, completionTokens: 30 });
  });

  it('strips the usage-only chunk wherever the stream is cut, and passes whole events without copying them', () => {
    const kept =
      'data: {"choices":[{"delta":{"content":"a"}}],"usage":null}\r\n\r\n' +
      'data: {"choices":[{"delta":{"content":"b"}}],"usage":null}\n\n';
    const body =
      kept + 'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\ndata: [DONE]\n\n';
    const bytes = Buffer.from(body);
    for (let first = 1; first < bytes.length; first++) {
      for (const second of [first + 1, first + 2, first + 3, bytes.length]) {
        const tap = createUsageTap({
          contentType: 'text/event-stream',
          stripUsageOnlyChunks: true,
          maxJsonBytes: 1000,
        });
        const out = [
          ...tap.chunk(bytes.subarray(0, first)),
          ...tap.chunk(bytes.subarray(first, Math.min(second, bytes.length))),
          ...tap.chunk(bytes.subarray(Math.min(second, bytes.length))),
        ];
        const end = tap.finish();
        expect(Buffer.concat([...out, ...end.tail]).toString(), `cut at ${first}/${second}`).toBe(
          kept + 'data: [DONE]\n\n',
        );
        expect(end.usage).toEqual({ promptTokens: 3, completionTokens: 1 });
      }
    }
    const whole = Buffer.from(kept);
    const tap = createUsageTap({
      contentType: 'text/event-stream',
      stripUsageOnlyChunks: true,
      maxJsonBytes: 1000,
    });
    const [only, ...more] = tap.chunk(whole);
    expect(more).toEqual([]);
    expect(only?.buffer).toBe(whole.buffer);
    expect(only?.byteOffset).toBe(whole.byteOffset);
    expect(only?.length).toBe(whole.length);
  });

  it('taps JSON bodies up to a size limit', () => {
    const json = JSON.stringify({ usage: { prompt_tokens: 1, completion_tokens: 2 } });
    const small = createUsageTap({
      contentType: 'application/json',
      stripUsageOnlyChunks: false,
      maxJsonBytes: 1000,
    });
    small.chunk(Buffer.from(json.slice(0, 10)));
    small.chunk(Buffer.from(json.slice(10)));
    expect(small.finish().usage).toEqual({ promptTokens: 1, completionTokens: 2 });
    const limited = createUsageTap({
      contentType: 'application/json',
      stripUsageOnlyChunks: false,
      maxJsonBytes: 5,
    });
    limited.chunk(Buffer.from(json));
    expect(limited.finish().usage).toBeUndefined();
  });

  it("prices tokens in integer micro-dollars, from the owner's prices, then the shipped table, else the ceiling", () => {
    const none = { prices: {} };
    const tokens = { promptTokens: 100_000, completionTokens: 100_000 };
    expect(
      costMicros(
        'm',
        { promptTokens: 1234, completionTokens: 56 },
        { prices: { m: { input_per_mtok_usd: 2.5, output_per_mtok_usd: 10 } } },
      ),
    ).toBe(3645);
    // The shipped table, under a router's prefix, a snapshot date or a dotted version.
    expect(costMicros('gpt-4.1-mini', tokens, none)).toBe(200_000);
    expect(costMicros('openai/gpt-4.1-mini', tokens, none)).toBe(200_000);
    expect(costMicros('gpt-4.1-mini-2025-04-14', tokens, none)).toBe(200_000);
    expect(costMicros('anthropic/claude-sonnet-4.5', tokens, none)).toBe(1_800_000);
    // The owner's entry wins, a price of 0 included (their local model).
    expect(
      costMicros('gpt-4.1-mini', tokens, {
        prices: { 'gpt-4.1-mini': { input_per_mtok_usd: 0, output_per_mtok_usd: 0 } },
      }),
    ).toBe(0);
    // Unknown: the ceiling (the dearest input and output rates known), never 0; an owner's dearer entry raises it.
    const ceiling = costMicros('local-llama', tokens, none);
    expect(ceiling).toBe(100_000 * 150 + 100_000 * 600);
    expect(costMicros('constructor', tokens, none)).toBe(ceiling);
    expect(
      costMicros('other', tokens, { prices: { big: { input_per_mtok_usd: 1000, output_per_mtok_usd: 1 } } }),
    ).toBe(100_000 * 1000 + 100_000 * 600);
  });

  it('dates its price table', () => {
    expect(PRICES_AS_OF).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('computes the calendar day in the configured time zone', () => {
    const instant = Date.UTC(2024, 2, 10, 23, 30);
    expect(createDayFormatter('Europe/Berlin')(instant)).toBe('2024-03-11');
    expect(createDayFormatter('America/New_York')(instant)).toBe('2024-03-10');
    expect(createDayFormatter('UTC')(instant)).toBe('2024-03-10');
    expect(() => createDayFormatter('Mars/Olympus')).toThrow(/unknown time zone/);
  });

  it("names the new day from the first millisecond after the zone's midnight, and the old one again before it", () => {
    const dayOf = createDayFormatter('Asia/Kathmandu'); // +05:45: midnight is not on a UTC hour
    const midnight = Date.UTC(2024, 2, 10, 18, 15);
    expect(dayOf(midnight - 1)).toBe('2024-03-10');
    expect(dayOf(midnight)).toBe('2024-03-11');
    expect(dayOf(midnight + 59_999)).toBe('2024-03-11');
    expect(dayOf(midnight - 1)).toBe('2024-03-10');
    expect(dayOf(midnight - 60_000)).toBe('2024-03-10');
  });
});

describe('usage tap fast path', () => {
  it('decodes only events whose usage is an object, not the null of every streamed chunk', () => {
    expect(
      mentionsUsageObject(Buffer.from('data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}\n\n')),
    ).toBe(false);
    expect(mentionsUsageObject(Buffer.from('data: {"choices":[],"usage":{"prompt_tokens":3}}\n\n'))).toBe(
      true,
    );
    expect(mentionsUsageObject(Buffer.from('data: {"usage" : \n {"input_tokens":1}}\n\n'))).toBe(true);
    expect(
      mentionsUsageObject(Buffer.from('data: {"text":"the word \\"usage\\" here","usage":null}\n\n')),
    ).toBe(false);
  });

  it('finds the usage key by its g wherever it is: first in the event, after other g bytes, and not in lookalikes', () => {
    expect(mentionsUsageObject(Buffer.from('"usage":{"prompt_tokens":1}'))).toBe(true);
    expect(
      mentionsUsageObject(
        Buffer.from(
          'data: {"choices":[{"delta":{"content":"big dog, gig, egg"}}],"usage":{"total_tokens":2}}\n\n',
        ),
      ),
    ).toBe(true);
    expect(
      mentionsUsageObject(Buffer.from('data: {"usages":{"a":1},"usage_x":{"b":2},"usage":null}\n\n')),
    ).toBe(false);
    expect(
      mentionsUsageObject(Buffer.from('data: {"usage":null,"other":{"usage":{"prompt_tokens":1}}}\n\n')),
    ).toBe(true);
    expect(mentionsUsageObject(Buffer.from('ggg'))).toBe(false);
  });
});
