import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOpenAiChatModel } from '../../../container-agent/src/llm/openai-chat-model.ts';
import { reply, startFakeProvider, type FakeProvider } from '../../fakes/fake-provider.ts';

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider({ apiKey: 'gw-unit' });
});
afterAll(async () => {
  await fake.close();
});

const signal = new AbortController().signal;
const tool = {
  name: 'echo',
  description: 'Echo.',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
};

describe('openai chat model', () => {
  it('built before its key is known, sends nothing until it has one, then authenticates with it', async () => {
    const given: { key?: string } = {};
    const model = createOpenAiChatModel({
      baseURL: fake.openaiBaseUrl,
      apiKey: () =>
        given.key === undefined ? Promise.reject(new Error('no key yet')) : Promise.resolve(given.key),
      maxRetries: 0,
    });
    const request = {
      model: 'm1',
      messages: [{ role: 'user' as const, content: 'U', chatIds: [1] }],
      tools: [],
      toolChoice: 'auto' as const,
      maxOutputTokens: 64,
      signal,
    };
    const before = fake.requests.length;
    await expect(model.complete(request)).rejects.toThrow(/no key yet/);
    expect(fake.requests.length).toBe(before);
    given.key = 'gw-unit';
    fake.script(reply.text('Hello.'));
    // The fake refuses any other key (401): an answer means the key given later was sent.
    expect((await model.complete(request)).content).toBe('Hello.');
    expect(fake.requests.length).toBe(before + 1);
  });

  it('maps the conversation, tools and answers to and from chat completions', async () => {
    fake.script(reply.toolCalls([{ id: 'call_1', name: 'echo', arguments: { text: 'hi' } }]));
    const model = createOpenAiChatModel({ baseURL: fake.openaiBaseUrl, apiKey: 'gw-unit', maxRetries: 0 });
    const before = fake.requests.length;
    const response = await model.complete({
      model: 'm1',
      messages: [
        { role: 'system', content: 'S' },
        { role: 'user', content: 'U', chatIds: [1] },
        { role: 'assistant', content: null, toolCalls: [{ id: 'c0', name: 'echo', arguments: '{}' }] },
        { role: 'tool', toolCallId: 'c0', content: 'R' },
      ],
      tools: [tool],
      toolChoice: 'auto',
      maxOutputTokens: 64,
      signal,
    });
    expect(response.toolCalls).toEqual([{ id: 'call_1', name: 'echo', arguments: '{"text":"hi"}' }]);
    expect(response.usage.promptTokens).toBeGreaterThan(0);
    const body = fake.requests[before]?.body as Record<string, unknown>;
    expect(body).toMatchObject({
      model: 'm1',
      max_completion_tokens: 64,
      tool_choice: 'auto',
      messages: [
        { role: 'system', content: 'S' },
        { role: 'user', content: 'U' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c0', type: 'function', function: { name: 'echo', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c0', content: 'R' },
      ],
    });
    expect(body.tools).toEqual([{ type: 'function', function: tool }]);
  });

  it('switches to max_tokens once when the provider rejects max_completion_tokens', async () => {
    const rejection = "Unsupported parameter: 'max_completion_tokens'. Use 'max_tokens' instead.";
    fake.script(
      reply.error(400, {
        body: { error: { message: rejection, type: 'invalid_request_error', param: null, code: null } },
      }),
      reply.text('first'),
      reply.text('second'),
    );
    const model = createOpenAiChatModel({ baseURL: fake.openaiBaseUrl, apiKey: 'gw-unit', maxRetries: 0 });
    const before = fake.requests.length;
    const request = {
      model: 'm1',
      messages: [{ role: 'user' as const, content: 'U' }],
      tools: [],
      toolChoice: 'auto' as const,
      maxOutputTokens: 32,
      signal,
    };
    expect((await model.complete(request)).content).toBe('first');
    expect((await model.complete(request)).content).toBe('second');
    const bodies = fake.requests.slice(before).map((r) => r.body as Record<string, unknown>);
    expect(bodies.map((b) => [b.max_completion_tokens, b.max_tokens])).toEqual([
      [32, undefined],
      [undefined, 32],
      [undefined, 32],
    ]);
    // No tools: no tool_choice either (providers reject one without the other).
    expect(bodies[1]).not.toHaveProperty('tool_choice');
  });
});

describe('openai chat model, streamed for drafts', () => {
  const request = (onDraft: (text: string) => void) => ({
    model: 'm1',
    messages: [{ role: 'user' as const, content: 'U' }],
    tools: [tool],
    toolChoice: 'auto' as const,
    maxOutputTokens: 64,
    signal,
    onDraft,
  });

  it('asks for a stream when drafts are taken, tells each text so far, and returns the whole answer', async () => {
    fake.script(reply.text('one two three four', { chunks: ['one ', 'two ', 'three ', 'four'] }));
    const model = createOpenAiChatModel({ baseURL: fake.openaiBaseUrl, apiKey: 'gw-unit', maxRetries: 0 });
    const before = fake.requests.length;
    const drafts: string[] = [];
    const response = await model.complete(request((t) => drafts.push(t)));
    expect(fake.requests[before]?.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(drafts).toEqual(['one ', 'one two ', 'one two three ', 'one two three four']);
    expect(response.content).toBe('one two three four');
    expect(response.toolCalls).toEqual([]);
    expect(response.finishReason).toBe('stop');
    expect(response.usage.completionTokens).toBeGreaterThan(0);
  });

  it('puts streamed tool calls back together and tells no draft once a tool is asked for', async () => {
    fake.script(
      reply.toolCalls(
        [
          { id: 'call_a', name: 'echo', arguments: { text: 'first' } },
          { id: 'call_b', name: 'echo', arguments: { text: 'second' } },
        ],
        { text: 'Let me look.' },
      ),
    );
    const model = createOpenAiChatModel({ baseURL: fake.openaiBaseUrl, apiKey: 'gw-unit', maxRetries: 0 });
    const drafts: string[] = [];
    const response = await model.complete(request((t) => drafts.push(t)));
    expect(response.toolCalls).toEqual([
      { id: 'call_a', name: 'echo', arguments: '{"text":"first"}' },
      { id: 'call_b', name: 'echo', arguments: '{"text":"second"}' },
    ]);
    expect(response.finishReason).toBe('tool_calls');
    // Text before the calls arrives first (as OpenAI streams it); nothing after the first call's chunk.
    expect(drafts.every((d) => 'Let me look.'.startsWith(d))).toBe(true);
  });

  it('does not stream without a draft listener', async () => {
    fake.script(reply.text('whole'));
    const model = createOpenAiChatModel({ baseURL: fake.openaiBaseUrl, apiKey: 'gw-unit', maxRetries: 0 });
    const before = fake.requests.length;
    const { onDraft: _unused, ...plain } = request(() => undefined);
    expect((await model.complete(plain)).content).toBe('whole');
    expect((fake.requests[before]?.body as Record<string, unknown>).stream).toBeUndefined();
  });
});
