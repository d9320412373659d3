import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { openStore, type Store } from '../../../host/store/store.ts';
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createSqliteUsageStore,
  type SqliteUsageStore,
} from '../../../host/gateway/spend/usage-store-sqlite.ts';
import { reply } from '../../fakes/fake-provider.ts';
import { createMemoryUsageStore } from '../../fakes/memory-usage-store.ts';
import {
  BERLIN_DAY,
  chatBody,
  jsonHeaders,
  rawRequest,
  REAL_KEY,
  startHarness,
  type Harness,
} from './gateway-harness.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';

let h: Harness | undefined;
let dir: string;
let db: Database.Database;
let hostStore: Store;
let store: SqliteUsageStore;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-'));
  hostStore = openStore({ file: path.join(dir, 'carapace.db') });
  db = hostStore.db;
  store = createSqliteUsageStore(db);
});
afterEach(async () => {
  await h?.close();
  h = undefined;
  hostStore.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const PRICES = { 'fake-model': { input_per_mtok_usd: 2, output_per_mtok_usd: 10 } };

describe('gateway usage accounting', () => {
  it('records tokens and cost per run, group and local day, from JSON and from SSE', async () => {
    h = await startHarness({ usageStore: store, gateway: { prices: PRICES } });
    h.fake.script(
      reply.text('plain', { usage: { promptTokens: 1000, completionTokens: 500 } }),
      reply.text('streamed reply', { usage: { promptTokens: 1000, completionTokens: 500 } }),
    );
    await h.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'a' }],
    });
    const stream = await h.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'b' }],
      stream: true,
    });
    for await (const chunk of stream) void chunk;

    // 1000 × $2/Mtok + 500 × $10/Mtok = 2000 + 5000 micro-dollars per request.
    expect(store.totalsForRun('run-1')).toEqual([
      {
        groupId: 'group-a',
        model: 'fake-model',
        requests: 2,
        promptTokens: 2000,
        completionTokens: 1000,
        costMicros: 14_000,
      },
    ]);
    expect(store.spentTodayMicros('group-a', BERLIN_DAY)).toBe(14_000);
    expect(store.spentTodayMicros('group-a', '2024-03-10')).toBe(0);
    expect(store.totalsForDay(BERLIN_DAY)).toHaveLength(1);
  });

  it('records usage of the responses API stream', async () => {
    h = await startHarness({ usageStore: store, gateway: { prices: PRICES } });
    h.fake.script(reply.text('r', { usage: { promptTokens: 10, completionTokens: 20 } }));
    const stream = await h.client.responses.create({ model: 'fake-model', input: 'x', stream: true });
    for await (const event of stream) void event;
    expect(store.totalsForRun('run-1')[0]).toMatchObject({
      promptTokens: 10,
      completionTokens: 20,
      costMicros: 220,
    });
  });

  it('charges a model without a price at the ceiling, and one the owner priced at 0 as free', async () => {
    h = await startHarness({
      usageStore: store,
      gateway: {
        prices: { ...PRICES, 'local-free': { input_per_mtok_usd: 0, output_per_mtok_usd: 0 } },
        allowed_models: ['local-llama', 'local-free'],
      },
    });
    h.fake.script(
      reply.text('unpriced', { usage: { promptTokens: 7, completionTokens: 3 } }),
      reply.text('free', { usage: { promptTokens: 7, completionTokens: 3 } }),
    );
    for (const model of ['local-llama', 'local-free'])
      await h.client.chat.completions.create({ model, messages: [{ role: 'user', content: 'a' }] });
    const rows = store.totalsForRun('run-1');
    // The ceiling: $150 in, $600 out per million tokens (the dearest rates the shipped table knows, o1-pro's).
    expect(rows.find((r) => r.model === 'local-llama')).toMatchObject({
      promptTokens: 7,
      completionTokens: 3,
      costMicros: 7 * 150 + 3 * 600,
    });
    expect(rows.find((r) => r.model === 'local-free')).toMatchObject({
      promptTokens: 7,
      completionTokens: 3,
      costMicros: 0,
    });
  });

  it("charges the cost the provider reports (OpenRouter's usage.cost) instead of the price", async () => {
    h = await startHarness({ usageStore: store, gateway: { prices: PRICES } });
    h.fake.script(
      reply.text('routed', { usage: { promptTokens: 1000, completionTokens: 10, costUsd: 0.0123 } }),
    );
    await h.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'a' }],
    });
    expect(store.totalsForRun('run-1')).toEqual([
      expect.objectContaining({
        model: 'fake-model',
        promptTokens: 1000,
        completionTokens: 10,
        costMicros: 12_300,
      }),
    ]);
  });

  it('records usage under the fallback model that answered', async () => {
    h = await startHarness({
      usageStore: store,
      gateway: { prices: PRICES, retry_attempts: 0 },
      provider: { fallback_models: ['fake-model-mini'] },
    });
    h.fake.script(reply.error(503), reply.text('ok', { usage: { promptTokens: 1, completionTokens: 1 } }));
    await h.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'a' }],
    });
    expect(store.totalsForRun('run-1').map((row) => row.model)).toEqual(['fake-model-mini']);
  });
});

describe('gateway spend cap', () => {
  it('refuses requests once the cap is crossed, telling each refusal to its run and the crossing to the owner once', async () => {
    // Each request costs 14 000 micro-dollars; the cap is 10 000.
    h = await startHarness({ usageStore: store, gateway: { prices: PRICES, daily_cap_usd: 0.01 } });
    h.fake.setResponder(() => reply.text('ok', { usage: { promptTokens: 2000, completionTokens: 1000 } }));
    const first = await rawRequest(h.port, {
      path: '/v1/chat/completions',
      headers: jsonHeaders(h.run.key),
      body: chatBody(),
    });
    expect(first.status).toBe(200);
    // The request that crossed the cap was answered: only the owner's warning, no refusal.
    expect(h.warnings).toEqual(['group-a']);
    expect(h.upstreamEvents).toEqual([]);

    const refused = await rawRequest(h.port, {
      path: '/v1/chat/completions',
      headers: jsonHeaders(h.run.key),
      body: chatBody(),
    });
    expect(refused.status).toBe(429);
    expect(refused.headers['x-should-retry']).toBe('false');
    expect(refused.json()).toMatchObject({
      error: {
        code: 'spend_cap_reached',
        message:
          'daily spend cap of $0.01 reached for group group-a; raise [gateway].daily_cap_usd or wait until tomorrow',
      },
    });
    await rawRequest(h.port, {
      path: '/v1/chat/completions',
      headers: jsonHeaders(h.run.key),
      body: chatBody(),
    });
    expect(h.upstreamEvents).toEqual(['spendCapRefused run-1', 'spendCapRefused run-1']);
    expect(h.warnings).toEqual(['group-a']);
    expect(h.fake.requests).toHaveLength(1);

    // Another group has its own budget.
    const other = h.gateway.issueKey({ runId: 'run-2', groupId: 'group-b' });
    const client = new OpenAI({ apiKey: other.key, baseURL: h.baseUrl, maxRetries: 0 });
    await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'b' }] });
    expect(h.fake.requests).toHaveLength(2);
  });

  it('applies per-group cap overrides and starts afresh on the next local day', async () => {
    const memory = createMemoryUsageStore();
    const time = fakeClock(Date.UTC(2024, 2, 10, 12, 0));
    memory.addSpend('group-a', '2024-03-10', 3_000_000);
    h = await startHarness({
      usageStore: memory,
      gateway: { daily_cap_usd: 1, group_caps_usd: { 'group-a': 5 } },
      clock: time.clock,
    });
    expect(
      (
        await rawRequest(h.port, {
          path: '/v1/chat/completions',
          headers: jsonHeaders(h.run.key),
          body: chatBody(),
        })
      ).status,
    ).toBe(200);

    memory.addSpend('group-a', '2024-03-10', 2_000_000);
    const refused = await rawRequest(h.port, {
      path: '/v1/chat/completions',
      headers: jsonHeaders(h.run.key),
      body: chatBody(),
    });
    expect(refused.status).toBe(429);
    expect(refused.text).toContain('[gateway].group_caps_usd.\\"group-a\\"');
    expect(h.upstreamEvents).toEqual(['spendCapRefused run-1']);

    // 23:30 UTC on the 10th is the 11th in Berlin: a new day, a new budget.
    time.jumpTo(Date.UTC(2024, 2, 10, 23, 30));
    expect(
      (
        await rawRequest(h.port, {
          path: '/v1/chat/completions',
          headers: jsonHeaders(h.run.key),
          body: chatBody(),
        })
      ).status,
    ).toBe(200);
    memory.addSpend('group-a', '2024-03-11', 5_000_000);
    expect(
      (
        await rawRequest(h.port, {
          path: '/v1/chat/completions',
          headers: jsonHeaders(h.run.key),
          body: chatBody(),
        })
      ).status,
    ).toBe(429);
    expect(h.upstreamEvents).toEqual(['spendCapRefused run-1', 'spendCapRefused run-1']);
  });
});

describe('gateway with an Anthropic provider', () => {
  const post = (harness: Harness, body: object, headers: Record<string, string> = {}) =>
    rawRequest(harness.port, {
      path: '/v1/messages',
      headers: { 'x-api-key': harness.run.key, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  it('forwards /v1/messages with x-api-key and anthropic-version, and records usage from JSON and SSE', async () => {
    h = await startHarness({
      usageStore: store,
      provider: { kind: 'anthropic', model: 'claude-test' },
      gateway: { prices: { 'claude-test': { input_per_mtok_usd: 3, output_per_mtok_usd: 15 } } },
    });
    h.fake.script(
      reply.text('bonjour', { usage: { promptTokens: 100, completionTokens: 10 } }),
      reply.text('streamed bonjour', { usage: { promptTokens: 200, completionTokens: 20 } }),
    );
    const plain = await post(h, { max_tokens: 50, messages: [{ role: 'user', content: 'salut' }] });
    expect(plain.status).toBe(200);
    expect(plain.json()).toMatchObject({ type: 'message', content: [{ type: 'text', text: 'bonjour' }] });

    const streamed = await post(
      h,
      { model: 'claude-test', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'encore' }] },
      { 'anthropic-version': '2023-06-01' },
    );
    expect(streamed.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(streamed.text).toContain('event: message_stop');

    const [first, second] = h.fake.requests;
    expect(first?.path).toBe('/v1/messages');
    expect(first?.headers['x-api-key']).toBe(REAL_KEY);
    expect(first?.headers['anthropic-version']).toBe('2023-06-01');
    expect(first?.headers.authorization).toBeUndefined();
    expect(first?.body).toMatchObject({ model: 'claude-test' });
    expect(second?.body).not.toHaveProperty('stream_options');
    // (100 + 200) × $3/Mtok + (10 + 20) × $15/Mtok
    expect(store.totalsForRun('run-1')).toEqual([
      {
        groupId: 'group-a',
        model: 'claude-test',
        requests: 2,
        promptTokens: 300,
        completionTokens: 30,
        costMicros: 1350,
      },
    ]);
  });

  it("uses Anthropic's OpenAI-compatible chat completions with a bearer key, and lists models with x-api-key", async () => {
    h = await startHarness({ provider: { kind: 'anthropic', model: 'claude-test' } });
    h.fake.models = ['claude-test', 'claude-other'];
    const completion = await h.client.chat.completions.create({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'hey' }],
    });
    expect(completion.choices[0]?.message.content).toBe('echo: hey');
    expect(h.fake.requests[0]?.path).toBe('/v1/chat/completions');
    expect(h.fake.requests[0]?.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
    const models = await h.client.models.list();
    expect(models.data.map((model) => model.id)).toEqual(['claude-test']);
    expect(h.fake.requests[1]?.headers['x-api-key']).toBe(REAL_KEY);
    expect(h.fake.requests[1]?.headers.authorization).toBeUndefined();
  });

  it('answers Anthropic-style errors on /v1/messages and refuses /v1/responses', async () => {
    h = await startHarness({ provider: { kind: 'anthropic', model: 'claude-test' } });
    const unauthorized = await post(h, { messages: [] }, { 'x-api-key': 'gw-nope' });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const refusedModel = await post(h, {
      model: 'claude-opus-expensive',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(refusedModel.status).toBe(403);
    expect(refusedModel.json()).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    const responses = await rawRequest(h.port, {
      path: '/v1/responses',
      headers: jsonHeaders(h.run.key),
      body: '{}',
    });
    expect(responses.status).toBe(404);
  });
});
