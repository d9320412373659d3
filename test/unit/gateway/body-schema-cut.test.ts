import { describe, expect, it } from 'vitest';
import { allowBody, createBodySchemas, type BodyKind } from '../../../host/gateway/proxy/body-allowlist.ts';

const user = [{ role: 'user', content: 'hi' }];
const CASES: [BodyKind, string, unknown][] = [
  ['chat', '/v1/chat/completions', { model: 'm', stream: true, messages: user }],
  ['chat', '/v1/chat/completions', { messages: user, max_tokens: 10, temperature: 0.5 }],
  ['chat', '/v1/chat/completions', { model: 'm' }],
  ['chat', '/v1/chat/completions', { model: 'm', messages: [] }],
  ['chat', '/v1/chat/completions', { model: 'm', messages: user, plugins: [{ id: 'web' }] }],
  ['chat', '/v1/chat/completions', { plugins: [], model: '', messages: user }],
  ['chat', '/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'x', extra: 1 }] }],
  ['chat', '/v1/chat/completions', { model: 'm', messages: user, tools: [{ type: 'web_search' }] }],
  ['chat', '/v1/chat/completions', { model: 'm', messages: user, n: 2 }],
  ['responses', '/v1/responses', { input: 'x', store: true }],
  ['responses', '/v1/responses', { input: 'x', store: false, previous_response_id: 'r1' }],
  ['responses', '/v1/responses', { input: [{ role: 'user', content: 'x' }], max_output_tokens: 5 }],
  ['messages', '/v1/messages', { messages: user, max_tokens: 5, system: 'be brief' }],
  ['messages', '/v1/messages', { messages: user, mcp_servers: [] }],
  ['messages', '/v1/messages', { messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] }],
];

describe('request body schemas cut to the fields a body has', () => {
  it('accept, refuse and word the refusal exactly as the whole schemas do, from the cache too', () => {
    const cut = createBodySchemas();
    for (let round = 0; round < 2; round++)
      for (const [kind, path, body] of CASES)
        expect(allowBody(kind, path, body, cut), `${JSON.stringify(body)} (round ${round})`).toEqual(
          allowBody(kind, path, body),
        );
  });

  it('keep agreeing with the whole schemas once they remember no more key sets', () => {
    const cut = createBodySchemas();
    const optional = {
      temperature: 1,
      top_p: 1,
      seed: 3,
      stream: true,
      n: 1,
      max_tokens: 9,
      parallel_tool_calls: true,
    };
    const names = Object.keys(optional) as (keyof typeof optional)[];
    for (let i = 0; i < 2 ** names.length; i++) {
      const picked = Object.fromEntries(
        names.filter((_, bit) => (i >> bit) & 1).map((k) => [k, optional[k]]),
      );
      const body = { ...picked, messages: user };
      expect(allowBody('chat', '/c', body, cut)).toEqual(allowBody('chat', '/c', body));
    }
    expect(allowBody('chat', '/c', { messages: user, seed: 1.5 }, cut)).toMatchObject({ ok: false });
  });
});
