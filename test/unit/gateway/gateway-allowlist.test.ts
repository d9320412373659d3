import { describe, expect, it } from 'vitest';
import {
  allowBody,
  clampOutputTokens,
  IMAGE_WORST_TOKENS,
  inlineImages,
} from '../../../host/gateway/proxy/body-allowlist.ts';
import { startHarness } from './gateway-harness.ts';

const chat = (extra: Record<string, unknown> = {}) =>
  allowBody('chat', '/v1/chat/completions', {
    model: 'm',
    messages: [{ role: 'user', content: 'hi' }],
    max_completion_tokens: 100,
    ...extra,
  });

describe('request body allowlist', () => {
  it('passes what the agent sends: messages, tool calls and results, function tools, a token bound', () => {
    const result = chat({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'list files' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{"cmd":"ls"}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'a.txt' },
      ],
      tools: [
        { type: 'function', function: { name: 'bash', description: 'run', parameters: { type: 'object' } } },
      ],
      tool_choice: 'auto',
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.2,
    });
    expect(result).toMatchObject({ ok: true });
  });

  it.each([
    ['plugins', { plugins: [{ id: 'web' }] }],
    ['models', { models: ['anthropic/claude-opus-4'] }],
    ['store', { store: true }],
    ['metadata', { metadata: { a: 'b' } }],
    ['web_search_options', { web_search_options: {} }],
    ['mcp_servers', { mcp_servers: [{ url: 'https://evil.example' }] }],
  ])('refuses %s on chat completions, naming the field', (field, extra) => {
    const result = chat(extra);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.message).toContain(`"${field}" is not accepted on /v1/chat/completions`);
      expect(result.message).toContain('accepted fields: model, messages');
    }
  });

  it('refuses n above 1, saying why', () => {
    const result = chat({ n: 4 });
    expect(result).toMatchObject({ ok: false, message: expect.stringMatching(/n must be 1/) });
    expect(chat({ n: 1 }).ok).toBe(true);
  });

  it('refuses tools that run on the provider side, on every route', () => {
    for (const tool of [
      { type: 'web_search' },
      { type: 'mcp', server_url: 'https://evil.example' },
      { type: 'code_interpreter' },
    ]) {
      const result = chat({ tools: [tool] });
      expect(result).toMatchObject({ ok: false, message: expect.stringMatching(/provider's side/) });
    }
    const anthropic = allowBody('messages', '/v1/messages', {
      max_tokens: 10,
      messages: [{ role: 'user', content: 'x' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search' }],
    });
    expect(anthropic).toMatchObject({ ok: false, message: expect.stringMatching(/provider's side/) });
    const responses = allowBody('responses', '/v1/responses', {
      input: 'x',
      tools: [{ type: 'web_search_preview' }],
    });
    expect(responses).toMatchObject({ ok: false, message: expect.stringMatching(/provider's side/) });
    expect(
      allowBody('messages', '/v1/messages', {
        max_tokens: 10,
        messages: [{ role: 'user', content: 'x' }],
        tools: [{ name: 'bash', input_schema: { type: 'object' } }],
      }).ok,
    ).toBe(true);
  });

  it('refuses content the provider would fetch (image and file parts)', () => {
    const result = chat({
      messages: [
        {
          role: 'user',
          content: [{ type: 'image_url', image_url: { url: 'https://evil.example/?q=secret' } }],
        },
      ],
    });
    expect(result).toMatchObject({ ok: false, message: expect.stringContaining('must be a data: URL') });
  });

  it("passes a user message's inline image (a data: URL) and refuses one anywhere else or of another type", () => {
    const png = `data:image/png;base64,${Buffer.from('89504e47', 'hex').toString('base64')}`;
    const parts = (url: string) => [
      { type: 'text', text: 'what is in this photo?' },
      { type: 'image_url', image_url: { url, detail: 'auto' } },
    ];
    expect(chat({ messages: [{ role: 'user', content: parts(png) }] }).ok).toBe(true);
    expect(chat({ messages: [{ role: 'system', content: parts(png) }] }).ok).toBe(false);
    expect(chat({ messages: [{ role: 'tool', tool_call_id: 'c', content: parts(png) }] }).ok).toBe(false);
    expect(chat({ messages: [{ role: 'user', content: parts('data:text/html;base64,PGI+') }] }).ok).toBe(
      false,
    );
    expect(chat({ messages: [{ role: 'user', content: parts(`${png}\nhttps://x`) }] }).ok).toBe(false);
  });

  it('reserves an inline image as what a provider bills for one, not as its base64 bytes', async () => {
    // 1.5 MB of base64 counted as tokens at $1 per million would be $1.50, over a $1 cap.
    const h = await startHarness({
      gateway: {
        daily_cap_usd: 1,
        prices: { 'fake-model': { input_per_mtok_usd: 1, output_per_mtok_usd: 1 } },
      },
    });
    try {
      const url = `data:image/jpeg;base64,${'A'.repeat(1_500_000)}`;
      expect(
        inlineImages('chat', {
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }],
        }),
      ).toEqual({ count: 1, chars: url.length });
      const answer = await h.client.chat.completions.create({
        model: 'fake-model',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is this?' },
              { type: 'image_url', image_url: { url } },
            ],
          },
        ],
      });
      expect(answer.choices[0]?.message.content).toBeTruthy();
      expect(h.upstreamEvents).toEqual([]);
      expect(IMAGE_WORST_TOKENS).toBe(6_000);
    } finally {
      await h.close();
    }
  });

  it('refuses store, metadata and unknown fields on the responses and messages routes too', () => {
    expect(allowBody('responses', '/v1/responses', { input: 'x', store: true }).ok).toBe(false);
    expect(allowBody('responses', '/v1/responses', { input: 'x', store: false }).ok).toBe(true);
    expect(allowBody('responses', '/v1/responses', { input: 'x', previous_response_id: 'r1' }).ok).toBe(
      false,
    );
    const messages = allowBody('messages', '/v1/messages', {
      max_tokens: 10,
      messages: [{ role: 'user', content: 'x' }],
      metadata: { user_id: 'u' },
    });
    expect(messages).toMatchObject({ ok: false, message: expect.stringContaining('"metadata"') });
    expect(allowBody('chat', '/v1/chat/completions', [1, 2]).ok).toBe(false);
  });
});

describe('output token bound', () => {
  it('clamps a larger ask to the limit and keeps a smaller one', () => {
    const big: Record<string, unknown> = { max_completion_tokens: 1_000_000 };
    expect(clampOutputTokens('chat', big, 4096)).toBe(4096);
    expect(big.max_completion_tokens).toBe(4096);
    const small: Record<string, unknown> = { max_tokens: 100 };
    expect(clampOutputTokens('chat', small, 4096)).toBe(100);
    expect(small).toEqual({ max_tokens: 100 });
  });

  it('sets the limit when the request names no bound, in the field of its API', () => {
    const chat: Record<string, unknown> = {};
    expect(clampOutputTokens('chat', chat, 512)).toBe(512);
    expect(chat).toEqual({ max_completion_tokens: 512 });
    const responses: Record<string, unknown> = {};
    clampOutputTokens('responses', responses, 512);
    expect(responses).toEqual({ max_output_tokens: 512 });
    const messages: Record<string, unknown> = {};
    clampOutputTokens('messages', messages, 512);
    expect(messages).toEqual({ max_tokens: 512 });
  });
});
