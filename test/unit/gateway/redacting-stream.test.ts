import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { createRedactingStream, redactionsFor } from '../../../host/gateway/credential/redacting-stream.ts';

/** Streams `chunks` through the redactor and returns what came out, whole. */
async function redactChunks(chunks: readonly string[], secrets: readonly string[]): Promise<string> {
  const out: Buffer[] = [];
  await pipeline(
    Readable.from(chunks.map((c) => Buffer.from(c))),
    createRedactingStream(redactionsFor(secrets)),
    async (source: AsyncIterable<Buffer>) => {
      for await (const part of source) out.push(part);
    },
  );
  return Buffer.concat(out).toString();
}

describe('the credential routes redacting stream', () => {
  const secret = 'ghp_0123456789abcdef';
  const body = `{"echo":"token ${secret} and again ${secret}","end":true}`;
  const expected = body.split(secret).join('[redacted]');

  it('redacts a secret echoed across a chunk boundary, wherever the boundary falls', async () => {
    for (let cut = 1; cut < body.length; cut++) {
      const out = await redactChunks([body.slice(0, cut), body.slice(cut)], [secret]);
      expect(out, `cut at ${cut}`).toBe(expected);
    }
  });

  it('redacts a secret spread over many one-byte chunks, and the longer of two overlapping secrets', async () => {
    expect(await redactChunks([...body], [secret])).toBe(expected);
    const header = `Bearer ${secret}`;
    const echoed = `auth: ${header}; value: ${secret}`;
    expect(
      await redactChunks([echoed.slice(0, 9), echoed.slice(9, 20), echoed.slice(20)], [secret, header]),
    ).toBe('auth: [redacted]; value: [redacted]');
  });

  it('passes a body without the secret unchanged, its last bytes included', async () => {
    const text = 'no secret here, but it ends with ghp_0123';
    expect(await redactChunks([text.slice(0, 10), text.slice(10)], [secret])).toBe(text);
  });
});
