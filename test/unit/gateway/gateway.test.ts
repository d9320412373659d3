import OpenAI from 'openai';
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reply } from '../../fakes/fake-provider.ts';
import {
  chatBody,
  jsonHeaders,
  rawRequest,
  REAL_KEY,
  startHarness,
  type Harness,
} from './gateway-harness.ts';
import { systemClock } from '../../../host/time/clock.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const ask = (harness: Harness, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}) =>
  harness.client.chat.completions.create({
    model: 'fake-model',
    messages: [{ role: 'user', content: 'hello' }],
    ...extra,
  });

describe('gateway forwarding', () => {
  it('forwards a chat completion with the real key injected and the gateway key stripped', async () => {
    h = await startHarness();
    const completion = await ask(h);
    expect(completion.choices[0]?.message.content).toBe('echo: hello');
    const [seen] = h.fake.requests;
    expect(seen?.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
    expect(JSON.stringify(seen?.headers)).not.toContain(h.run.key);
    expect(seen?.rawBody).not.toContain(h.run.key);
    expect(seen?.headers['x-api-key']).toBeUndefined();
  });

  it('refuses provider-side tools before anything reaches the provider', async () => {
    h = await startHarness();
    for (const tools of [[{ type: 'web_search' }], [{ type: 'mcp', server_url: 'https://evil.example' }]]) {
      const res = await rawRequest(h.port, {
        path: '/v1/chat/completions',
        headers: jsonHeaders(h.run.key),
        body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }], tools }),
      });
      expect(res.status).toBe(400);
      expect(res.text).toMatch(/provider's side/);
    }
    expect(h.fake.requests).toHaveLength(0);
  });

  it('refuses plugins, models, store and n: 4 before anything reaches the provider', async () => {
    h = await startHarness();
    for (const extra of [
      { plugins: [{ id: 'web' }] },
      { models: ['other/model'] },
      { store: true },
      { n: 4 },
    ]) {
      const res = await rawRequest(h.port, {
        path: '/v1/chat/completions',
        headers: jsonHeaders(h.run.key),
        body: chatBody(extra),
      });
      expect(res.status).toBe(400);
      expect(res.json()).toMatchObject({ error: { code: 'invalid_request' } });
    }
    expect(h.fake.requests).toHaveLength(0);
  });

  it('clamps the output bound to the run limit, and sets it when the request has none', async () => {
    h = await startHarness();
    await ask(h, { max_completion_tokens: 1_000_000 });
    await ask(h);
    await h.client.responses.create({ model: 'fake-model', input: 'x' });
    expect(h.fake.requests.map((r) => r.body)).toMatchObject([
      { max_completion_tokens: 4096 },
      { max_completion_tokens: 4096 },
      { max_output_tokens: 4096, store: false },
    ]);
  });

  it('sends the response headers at once while the provider holds the body back', async () => {
    h = await startHarness();
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    h.fake.script(reply.text('late', { holdBody: held }));
    // Resolves on the response headers: they must not wait for the first body bytes.
    const response = await request(`http://127.0.0.1:${h.port}/v1/chat/completions`, {
      method: 'POST',
      headers: jsonHeaders(h.run.key) as Record<string, string>,
      body: chatBody({ stream: true }),
    });
    expect(response.statusCode).toBe(200);
    release();
    expect(await response.body.text()).toContain('late');
  });

  it('takes one billable request per run at a time and refuses the others, marked not to retry', async () => {
    h = await startHarness();
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    h.fake.script(reply.text('slow', { pauseAfterChunks: 0, resume: held }));
    const first = h.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'hello' }],
      stream: true,
    });
    await h.fake.waitForRequests(1);
    const second = await rawRequest(h.port, {
      path: '/v1/chat/completions',
      headers: jsonHeaders(h.run.key),
      body: chatBody(),
    });
    expect(second.status).toBe(429);
    expect(second.headers['x-should-retry']).toBe('false');
    expect(second.json()).toMatchObject({ error: { code: 'request_in_flight' } });
    // Another run's key is not held up, and neither is a model list of the same run.
    const other = h.gateway.issueKey({ runId: 'run-2', groupId: 'group-a' });
    const otherClient = new OpenAI({ apiKey: other.key, baseURL: h.baseUrl, maxRetries: 0 });
    await expect(
      otherClient.chat.completions.create({
        model: 'fake-model',
        messages: [{ role: 'user', content: 'b' }],
      }),
    ).resolves.toBeDefined();
    await expect(h.client.models.list()).resolves.toBeDefined();
    release();
    for await (const chunk of await first) void chunk;
    // The slot is free again once the answer is through.
    await expect(ask(h)).resolves.toBeDefined();
    expect(h.fake.requests.filter((r) => r.api === 'chat')).toHaveLength(3);
  });

  it('fills in the provider model when the request omits it', async () => {
    h = await startHarness();
    const res = await rawRequest(h.port, {
      path: '/v1/chat/completions',
      headers: jsonHeaders(h.run.key),
      body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(res.status).toBe(200);
    expect(h.fake.requests[0]?.body).toMatchObject({ model: 'fake-model' });
  });

  it('passes stream chunks on before the upstream stream has ended', async () => {
    h = await startHarness();
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    h.fake.script(
      reply.text('', { chunks: ['first ', 'second ', 'third'], pauseAfterChunks: 1, resume: resumed }),
    );
    const stream = await h.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    const order: string[] = [];
    const chunkShapes: number[] = [];
    for await (const chunk of stream) {
      chunkShapes.push(chunk.choices.length);
      const piece = chunk.choices[0]?.delta.content;
      if (!piece) continue;
      // The provider is parked after "first " until resume(): receiving it proves the gateway did not buffer.
      order.push(`${piece}|upstream-done=${String(h.fake.requests[0]?.completed)}`);
      if (piece === 'first ') resume();
    }
    expect(order[0]).toBe('first |upstream-done=false');
    expect(order.map((entry) => entry.split('|')[0])).toEqual(['first ', 'second ', 'third']);
    // The gateway asked for usage on the client's behalf, and hid the usage-only chunk it did not ask for.
    expect(h.fake.requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(chunkShapes).not.toContain(0);
  });

  it('keeps the usage chunk when the client asked for it', async () => {
    h = await startHarness();
    h.fake.script(reply.text('a b', { usage: { promptTokens: 9, completionTokens: 2 } }));
    const stream = await h.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: unknown;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    expect(usage).toEqual({ prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 });
  });

  it('forwards the responses API and lists only allowed models', async () => {
    h = await startHarness({ provider: { fallback_models: ['fake-model-mini'] } });
    h.fake.models = ['fake-model', 'fake-model-mini', 'some-other-model'];
    const response = await h.client.responses.create({ model: 'fake-model', input: 'hi there' });
    expect(response.output_text).toBe('echo: hi there');
    expect(h.fake.requests[0]?.path).toBe('/v1/responses');
    const models = await h.client.models.list();
    expect(models.data.map((model) => model.id)).toEqual(['fake-model', 'fake-model-mini']);
  });
});

describe('gateway keys', () => {
  it('rejects missing, wrong and revoked keys with a 401 OpenAI error, and accepts x-api-key', async () => {
    h = await startHarness();
    const post = (headers: Record<string, string>) =>
      rawRequest(h!.port, {
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json', ...headers },
        body: chatBody(),
      });

    const missing = await post({});
    expect(missing.status).toBe(401);
    expect(missing.json()).toMatchObject({
      error: { code: 'invalid_api_key', type: 'authentication_error' },
    });
    expect((await post({ authorization: `Bearer ${h.run.key}x` })).status).toBe(401);
    expect((await post({ authorization: `Bearer gw-short` })).status).toBe(401);
    expect((await post({ authorization: `Bearer ${REAL_KEY}` })).status).toBe(401);
    expect(h.fake.requests).toHaveLength(0);

    expect((await post({ 'x-api-key': h.run.key })).status).toBe(200);
    expect(h.fake.requests[0]?.headers.authorization).toBe(`Bearer ${REAL_KEY}`);

    h.run.revoke();
    expect((await post({ authorization: `Bearer ${h.run.key}` })).status).toBe(401);
    expect(h.fake.requests).toHaveLength(1);
  });

  it('keeps keys of other runs valid when one is revoked, and issues distinct gw- keys', async () => {
    h = await startHarness();
    const other = h.gateway.issueKey({ runId: 'run-2', groupId: 'group-b' });
    expect(other.key).toMatch(/^gw-[A-Za-z0-9_-]{43}$/);
    expect(other.key).not.toBe(h.run.key);
    h.run.revoke();
    const client = new OpenAI({ apiKey: other.key, baseURL: h.baseUrl, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'b' }],
    });
    expect(completion.choices[0]?.message.content).toBe('echo: b');
  });

  it('never logs the real key or the gateway key', async () => {
    h = await startHarness();
    h.fake.script(reply.error(500), reply.text('ok'));
    await ask(h);
    await rawRequest(h.port, {
      path: '/v1/chat/completions',
      headers: jsonHeaders('gw-wrong'),
      body: chatBody(),
    });
    const logged = JSON.stringify(h.logs);
    expect(h.logs.length).toBeGreaterThan(0);
    expect(logged).not.toContain(REAL_KEY);
    expect(logged).not.toContain(h.run.key);
    expect(logged).not.toContain('gw-wrong');
  });
});

describe('gateway headers and limits', () => {
  it('drops hop-by-hop and non-allowlisted headers both ways', async () => {
    h = await startHarness();
    h.fake.script(
      reply.text('ok', {
        headers: {
          'set-cookie': 'session=1',
          'x-ratelimit-remaining-requests': '99',
          'openai-organization': 'org-secret',
          'x-upstream-debug': 'y',
        },
      }),
    );
    const res = await rawRequest(h.port, {
      path: '/v1/chat/completions',
      headers: jsonHeaders(h.run.key, {
        connection: 'keep-alive, x-hop-custom',
        'x-hop-custom': '1',
        'keep-alive': 'timeout=5',
        'proxy-authorization': 'Basic Zm9vOmJhcg==',
        te: 'trailers',
        cookie: 'a=b',
        'openai-organization': 'org-from-container',
        'openai-beta': 'assistants=v2',
        'x-forwarded-for': '10.0.0.1',
      }),
      body: chatBody(),
    });
    expect(res.status).toBe(200);
    const seen = h.fake.requests[0]!.headers;
    for (const name of [
      'x-hop-custom',
      'keep-alive',
      'proxy-authorization',
      'te',
      'cookie',
      'openai-organization',
      'x-forwarded-for',
    ]) {
      expect(seen[name], name).toBeUndefined();
    }
    expect(seen.connection ?? 'keep-alive').not.toContain('x-hop-custom');
    expect(seen['openai-beta']).toBe('assistants=v2');
    expect(res.headers['x-ratelimit-remaining-requests']).toBe('99');
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.headers['openai-organization']).toBeUndefined();
    expect(res.headers['x-upstream-debug']).toBeUndefined();
  });

  it('answers 413 to bodies over the limit, declared or chunked, without calling the provider', async () => {
    h = await startHarness({ gateway: { max_request_bytes: 1024 } });
    const big = chatBody({ padding: 'x'.repeat(2048) });
    const declared = await rawRequest(h.port, {
      path: '/v1/chat/completions',
      headers: jsonHeaders(h.run.key),
      body: big,
    });
    expect(declared.status).toBe(413);
    expect(declared.json()).toMatchObject({ error: { code: 'request_too_large' } });
    const chunked = await rawRequest(h.port, {
      path: '/v1/chat/completions',
      headers: jsonHeaders(h.run.key),
      body: big,
      chunked: true,
    });
    expect(chunked.status).toBe(413);
    expect(h.fake.requests).toHaveLength(0);
  });

  it('refuses models outside the allowlist and accepts configured extras', async () => {
    h = await startHarness({ gateway: { allowed_models: ['extra-model'] } });
    const refused = await ask(h, { model: 'gpt-expensive' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((refused as Error).message).toContain('model "gpt-expensive" is not allowed');
    expect(h.fake.requests).toHaveLength(0);
    expect((await ask(h, { model: 'extra-model' })).model).toBe('extra-model');
    expect((await ask(h, { model: 'fake-model' })).model).toBe('fake-model');
  });

  it('takes a reloaded allowlist and size limit at the next request, without a restart', async () => {
    h = await startHarness();
    await expect(ask(h, { model: 'extra-model' })).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
    h.reconfigure({ allowed_models: ['extra-model'] });
    expect((await ask(h, { model: 'extra-model' })).model).toBe('extra-model');
    h.reconfigure({ max_request_bytes: 10 });
    await expect(ask(h, {})).rejects.toMatchObject({ status: 413 });
  });

  it('answers 400 to a body that is not JSON', async () => {
    h = await startHarness();
    const res = await rawRequest(h.port, {
      path: '/v1/chat/completions',
      headers: jsonHeaders(h.run.key),
      body: '{nope',
    });
    expect(res.status).toBe(400);
    expect(res.json()).toMatchObject({ error: { message: 'request body is not valid JSON' } });
  });

  it('answers 404 for unknown routes and for /v1/messages with an OpenAI provider', async () => {
    h = await startHarness();
    const unknown = await rawRequest(h.port, {
      path: '/v1/embeddings',
      headers: jsonHeaders(h.run.key),
      body: '{}',
    });
    expect(unknown.status).toBe(404);
    const messages = await rawRequest(h.port, {
      path: '/v1/messages',
      headers: { 'x-api-key': h.run.key },
      body: '{}',
    });
    expect(messages.status).toBe(404);
    expect(messages.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });

  it('replaces an upstream authentication failure by a 502 the container cannot misread, and redacts the key', async () => {
    h = await startHarness({ providerApiKey: 'sk-wrong-host-key' });
    const failed = await ask(h).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(OpenAI.APIError);
    expect((failed as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect((failed as Error).message).toContain('[provider].api_key_env');
    // The host hears it, so the run is not started again for a key that cannot work.
    expect(h.upstreamEvents).toEqual(['authRejected run-1 401']);
    await h.close();

    h = await startHarness();
    h.fake.script(reply.error(400, { body: { error: { message: `bad request for key ${REAL_KEY}` } } }));
    const res = await rawRequest(h.port, {
      path: '/v1/chat/completions',
      headers: jsonHeaders(h.run.key),
      body: chatBody(),
    });
    expect(res.status).toBe(400);
    expect(res.text).not.toContain(REAL_KEY);
    expect(res.text).toContain('[redacted]');
  });
});

describe('gateway retries, timeouts and aborts', () => {
  it('retries a 500 and returns the later success', async () => {
    h = await startHarness();
    h.fake.script(reply.error(500), reply.text('second time lucky'));
    expect((await ask(h)).choices[0]?.message.content).toBe('second time lucky');
    expect(h.fake.requests).toHaveLength(2);
    expect(h.sleeps).toHaveLength(1);
  });

  it('waits as long as retry-after says on a 429', async () => {
    h = await startHarness({ gateway: { retry_base_ms: 10 } });
    h.fake.script(
      reply.error(429, { headers: { 'retry-after': '3' } }),
      reply.error(429, { headers: { 'retry-after-ms': '1500' } }),
      reply.text('ok'),
    );
    expect((await ask(h)).choices[0]?.message.content).toBe('ok');
    expect(h.sleeps).toEqual([3000, 1500]);
  });

  it('does not wait out a retry-after beyond the bound and passes the 429 on, marked not to retry', async () => {
    h = await startHarness({ gateway: { retry_max_delay_ms: 1000 } });
    h.fake.script(reply.error(429, { headers: { 'retry-after': '30' } }), reply.text('never reached'));
    const res = await rawRequest(h.port, {
      path: '/v1/chat/completions',
      headers: jsonHeaders(h.run.key),
      body: chatBody(),
    });
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('30');
    expect(res.headers['x-should-retry']).toBe('false');
    expect(h.fake.requests).toHaveLength(1);
    expect(h.sleeps).toEqual([]);
  });

  it('gives up after retry_attempts and returns the provider error', async () => {
    h = await startHarness({ gateway: { retry_attempts: 2 } });
    h.fake.script(reply.error(503), reply.error(503), reply.error(503), reply.text('not reached'));
    const failed = await ask(h).catch((e: unknown) => e);
    expect((failed as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect(h.fake.requests).toHaveLength(3);
  });

  it('falls back to the next model when the primary keeps failing', async () => {
    h = await startHarness({
      gateway: { retry_attempts: 1 },
      provider: { fallback_models: ['fake-model-mini'] },
    });
    h.fake.script(reply.error(500), reply.error(502), reply.text('from the fallback'));
    const completion = await ask(h);
    expect(completion.choices[0]?.message.content).toBe('from the fallback');
    expect(completion.model).toBe('fake-model-mini');
    expect(h.fake.requests.map((request) => (request.body as { model: string }).model)).toEqual([
      'fake-model',
      'fake-model',
      'fake-model-mini',
    ]);
  });

  it('does not retry or fall back on a 4xx other than 429', async () => {
    h = await startHarness({ provider: { fallback_models: ['fake-model-mini'] } });
    h.fake.script(reply.error(400), reply.text('not reached'));
    const failed = await ask(h).catch((e: unknown) => e);
    expect((failed as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect(h.fake.requests).toHaveLength(1);
  });

  it('answers 504 when the provider hangs past the first-byte deadline, aborts the upstream request and tells the host', async () => {
    h = await startHarness({ gateway: { first_byte_timeout_ms: 200 } });
    h.fake.script(reply.hang());
    const failed = await ask(h).catch((e: unknown) => e);
    expect((failed as InstanceType<typeof OpenAI.APIError>).status).toBe(504);
    expect((failed as Error).message).toContain('[gateway] first_byte_timeout_ms');
    await h.fake.waitForAbort(h.fake.requests[0]!);
    expect(h.fake.requests).toHaveLength(1);
    expect(h.upstreamEvents).toEqual([
      'providerTimedOut run-1 the LLM provider did not start answering within 0.2 s ([gateway] first_byte_timeout_ms)',
    ]);
  });

  it("bounds a run's waits for the provider in all: once they add up to the budget, requests are refused unsent", async () => {
    // A running clock: the budget is spent by real waits (undici's timers are coarse, so how many requests
    // fit is not asserted, only that the budget ends them).
    h = await startHarness({
      gateway: { first_byte_timeout_ms: 300, run_first_byte_budget_ms: 600 },
      clock: systemClock,
    });
    h.fake.script(reply.hang(), reply.hang(), reply.hang(), reply.text('never asked'));
    const messages: string[] = [];
    for (let i = 0; i < 4; i++) messages.push(((await ask(h).catch((e: unknown) => e)) as Error).message);
    expect(messages[0]).toContain('[gateway] first_byte_timeout_ms');
    expect(messages[3]).toMatch(/^504 .*\[gateway\] run_first_byte_budget_ms/);
    // At most two hung requests fit in the budget; the rest never reached the provider.
    expect(h.fake.requests.length).toBeLessThanOrEqual(2);
    expect(h.upstreamEvents.filter((e) => e.startsWith('providerTimedOut run-1'))).toHaveLength(4);
  });

  it('tells the host once a request has waited slow_notice_ms for the provider, and goes on waiting', async () => {
    h = await startHarness({ gateway: { first_byte_timeout_ms: 5000, slow_notice_ms: 50 } });
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    h.fake.script(async () => {
      await answered;
      return reply.text('late but fine');
    });
    const pending = ask(h);
    // The provider has the request, so the wait has begun; the gateway's clock moves only when told.
    await vi.waitUntil(() => h!.fake.requests.length > 0, { timeout: 4000, interval: 10 });
    h.time.advance(49);
    expect(h.upstreamEvents).toEqual([]);
    h.time.advance(1);
    expect(h.upstreamEvents).toEqual(['slow run-1 50']);
    answer();
    expect((await pending).choices[0]?.message.content).toBe('late but fine');
    expect(h.upstreamEvents).toEqual(['slow run-1 50']);
  });

  it('does not retry once bytes were streamed to the client', async () => {
    h = await startHarness({ provider: { fallback_models: ['fake-model-mini'] } });
    let read!: () => void;
    const firstChunkRead = new Promise<void>((resolve) => (read = resolve));
    h.fake.script(
      reply.text('', { chunks: ['partial ', 'rest'], drop: { afterChunks: 1, when: firstChunkRead } }),
      reply.text('a retry would show this'),
    );
    const stream = await h.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    const seen: string[] = [];
    const failure = await (async () => {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) seen.push(chunk.choices[0].delta.content);
        if (seen.length === 1) read();
      }
    })().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(Error);
    expect(seen).toEqual(['partial ']);
    expect(h.fake.requests).toHaveLength(1);
    // The fake's own close is not a client abort, and no second request was made.
    expect(h.fake.requests[0]?.aborted).toBe(false);
    expect(h.fake.pending).toBe(1);
  });

  it('aborts the upstream stream when the client disconnects mid-stream', async () => {
    h = await startHarness();
    h.fake.script(
      reply.text('', { chunks: ['one ', 'two'], pauseAfterChunks: 1, resume: new Promise(() => undefined) }),
    );
    const controller = new AbortController();
    const stream = await h.client.chat.completions.create(
      { model: 'fake-model', messages: [{ role: 'user', content: 'x' }], stream: true },
      { signal: controller.signal },
    );
    const reading = (async () => {
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content === 'one ') controller.abort();
    })().catch((e: unknown) => e);
    await reading;
    await h.fake.waitForAbort(h.fake.requests[0]!);
    expect(h.fake.requests[0]?.aborted).toBe(true);
  });

  it('aborts the upstream request when the client disconnects before any answer', async () => {
    h = await startHarness();
    h.fake.script(reply.hang());
    const controller = new AbortController();
    const pending = h.client.chat.completions
      .create(
        { model: 'fake-model', messages: [{ role: 'user', content: 'x' }] },
        { signal: controller.signal },
      )
      .catch((e: unknown) => e);
    const [request] = await h.fake.waitForRequests(1);
    controller.abort();
    expect(await pending).toBeInstanceOf(OpenAI.APIUserAbortError);
    await h.fake.waitForAbort(request!);
    expect(request?.aborted).toBe(true);
    expect(h.logs.some((entry) => entry.msg.includes('client went away'))).toBe(true);
  });
});
