import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  estimateTokens,
  promptTextOf,
  reply,
  startFakeProvider,
  type FakeProvider,
} from '../../fakes/fake-provider.ts';

const KEY = 'sk-fake-test-key';

function parseSse(text: string): { event: string | undefined; data: string }[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim().length > 0)
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((line) => line.startsWith('event: '))?.slice(7);
      const data = lines
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('\n');
      return { event, data };
    });
}

describe('fake provider', () => {
  let fake: FakeProvider;
  let client: OpenAI;

  beforeEach(async () => {
    fake = await startFakeProvider({ apiKey: KEY });
    client = new OpenAI({ apiKey: KEY, baseURL: fake.openaiBaseUrl, maxRetries: 0 });
  });
  afterEach(async () => {
    await fake.close();
  });

  it('echoes the last user message by default, with deterministic usage, and records the request', async () => {
    const messages = [
      { role: 'system' as const, content: 'be brief' },
      { role: 'user' as const, content: 'hello there' },
    ];
    const completion = await client.chat.completions.create({ model: 'fake-model', messages });
    expect(completion.choices[0]?.message.content).toBe('echo: hello there');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage).toEqual({
      prompt_tokens: estimateTokens(promptTextOf({ messages })),
      completion_tokens: estimateTokens('echo: hello there'),
      total_tokens: estimateTokens(promptTextOf({ messages })) + estimateTokens('echo: hello there'),
    });
    expect(fake.requests).toHaveLength(1);
    const [request] = fake.requests;
    expect(request?.api).toBe('chat');
    expect(request?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request?.body).toMatchObject({ model: 'fake-model', messages });
    expect(request?.completed).toBe(true);
    expect(request?.aborted).toBe(false);
  });

  it('streams SSE chunks with a usage chunk and [DONE] that the OpenAI SDK assembles', async () => {
    fake.script(
      reply.text('one two three', { usage: { promptTokens: 11, completionTokens: 3 }, chunkDelayMs: 5 }),
    );
    const stream = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'count' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    let usage: unknown;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) pieces.push(chunk.choices[0].delta.content);
      if (chunk.usage) usage = chunk.usage;
    }
    expect(pieces).toEqual(['one ', 'two ', 'three']);
    expect(usage).toEqual({ prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 });
  });

  it('ends a raw stream with data: [DONE] and no usage chunk unless asked', async () => {
    fake.script(reply.text('hi'));
    const response = await fetch(`${fake.openaiBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await response.text();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    const events = parseSse(text);
    expect(events.every((event) => !event.data.includes('"usage"'))).toBe(true);
  });

  it('scripts tool calls, streamed and not, in the shape the SDK parses', async () => {
    fake.script(
      reply.toolCalls([{ id: 'call_1', name: 'get_weather', arguments: { city: 'Oslo' } }]),
      reply.toolCalls([{ name: 'send_message', arguments: '{"text":"hi"}' }]),
    );
    const plain = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'weather?' }],
    });
    expect(plain.choices[0]?.finish_reason).toBe('tool_calls');
    const call = plain.choices[0]?.message.tool_calls?.[0];
    expect(call?.type === 'function' ? call.function : undefined).toEqual({
      name: 'get_weather',
      arguments: '{"city":"Oslo"}',
    });
    expect(call?.id).toBe('call_1');

    const streamed = client.chat.completions.stream({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'send' }],
    });
    const final = await streamed.finalChatCompletion();
    const streamedCall = final.choices[0]?.message.tool_calls?.[0];
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    expect(streamedCall?.type === 'function' ? streamedCall.function : undefined).toEqual({
      name: 'send_message',
      arguments: '{"text":"hi"}',
    });
  });

  it('answers scripted errors with status, body and headers', async () => {
    fake.script(reply.error(429, { headers: { 'retry-after': '7' } }));
    const error = await client.chat.completions
      .create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after')).toBe('7');
  });

  it('rejects a wrong API key with 401 like OpenAI', async () => {
    const bad = new OpenAI({ apiKey: 'sk-wrong', baseURL: fake.openaiBaseUrl, maxRetries: 0 });
    const error = await bad.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(fake.pending).toBe(0);
  });

  it('lists models', async () => {
    fake.models = ['a-model', 'b-model'];
    const page = await client.models.list();
    expect(page.data.map((model) => model.id)).toEqual(['a-model', 'b-model']);
  });

  it('uses a responder function when the script is empty, and scripted functions in order', async () => {
    fake.setResponder((request) =>
      reply.text(`turns: ${(request.body as { messages: unknown[] }).messages.length}`),
    );
    fake.script(() => reply.text('scripted first'));
    const ask = async () =>
      (
        await client.chat.completions.create({
          model: 'm',
          messages: [
            { role: 'user', content: 'a' },
            { role: 'user', content: 'b' },
          ],
        })
      ).choices[0]?.message.content;
    expect(await ask()).toBe('scripted first');
    expect(await ask()).toBe('turns: 2');
  });

  it('records a client abort of a hanging request', async () => {
    fake.script(reply.hang());
    const controller = new AbortController();
    const pending = client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, { signal: controller.signal })
      .catch((e: unknown) => e);
    const [request] = await fake.waitForRequests(1);
    controller.abort();
    expect(await pending).toBeInstanceOf(OpenAI.APIUserAbortError);
    const abortedAt = await fake.waitForAbort(request!);
    expect(abortedAt).toBeGreaterThanOrEqual(request!.receivedAt);
    expect(request?.aborted).toBe(true);
    expect(request?.completed).toBe(false);
  });

  it('holds a stream at pauseAfterChunks until resumed', async () => {
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    fake.script(reply.text('', { chunks: ['a', 'b', 'c'], pauseAfterChunks: 1, resume: resumed }));
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    const seen: string[] = [];
    for await (const chunk of stream) {
      const piece = chunk.choices[0]?.delta.content;
      if (!piece) continue;
      seen.push(piece);
      // The fake cannot have sent "b" yet: it waits for this resume.
      if (piece === 'a') {
        expect(fake.requests[0]?.completed).toBe(false);
        resume();
      }
    }
    expect(seen).toEqual(['a', 'b', 'c']);
  });

  it('serves the responses API, plain and streamed', async () => {
    fake.script(reply.text('plain answer'), reply.text('streamed answer'));
    const plain = await client.responses.create({ model: 'fake-model', input: 'hi' });
    expect(plain.output_text).toBe('plain answer');
    expect(plain.usage?.input_tokens).toBe(estimateTokens(JSON.stringify('hi')));
    const stream = await client.responses.create({ model: 'fake-model', input: 'hi', stream: true });
    const types: string[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
    }
    expect(text).toBe('streamed answer');
    expect(types.at(-1)).toBe('response.completed');
  });

  it('serves Anthropic messages with x-api-key, plain and streamed', async () => {
    fake.script(
      reply.text('bonjour', { usage: { promptTokens: 5, completionTokens: 2 } }),
      reply.toolCalls([{ id: 'tu_1', name: 'lookup', arguments: { q: 'x' } }]),
    );
    const post = (body: object) =>
      fetch(`${fake.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const plain = (await (
      await post({ model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'salut' }] })
    ).json()) as Record<string, unknown>;
    expect(plain).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: 'bonjour' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 5, output_tokens: 2 },
    });

    const streamed = await (
      await post({
        model: 'claude-x',
        max_tokens: 10,
        stream: true,
        messages: [{ role: 'user', content: 'go' }],
      })
    ).text();
    const events = parseSse(streamed);
    expect(events[0]?.event).toBe('message_start');
    expect(events.at(-1)?.event).toBe('message_stop');
    const toolStart = events.find(
      (event) => event.event === 'content_block_start' && event.data.includes('tool_use'),
    );
    expect(JSON.parse(toolStart!.data)).toMatchObject({
      content_block: { type: 'tool_use', id: 'tu_1', name: 'lookup' },
    });
    const json = events
      .filter((event) => event.event === 'content_block_delta')
      .map(
        (event) => (JSON.parse(event.data) as { delta: { partial_json?: string } }).delta.partial_json ?? '',
      )
      .join('');
    expect(JSON.parse(json)).toEqual({ q: 'x' });
    const delta = events.find((event) => event.event === 'message_delta');
    expect(JSON.parse(delta!.data)).toMatchObject({ delta: { stop_reason: 'tool_use' } });

    const unauthorized = await fetch(`${fake.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'nope' },
      body: '{}',
    });
    expect(unauthorized.status).toBe(401);
    expect(await unauthorized.json()).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error' },
    });
  });
});
