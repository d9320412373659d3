import { once } from 'node:events';
import { createServer, get, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { relayStream, type StreamRelayResult } from '../../../host/gateway/proxy/response-relay.ts';
import { dispatchUpstream } from '../../../host/gateway/proxy/upstream-dispatch.ts';

/**
 * The relay on its own, between two real HTTP servers: an upstream the test scripts byte by byte, and a
 * hop that does what the gateway does with an admitted request (dispatch upstream, relay the answer; a
 * client that goes away aborts the upstream request).
 */
interface Rig {
  hopUrl: string;
  /** What each relay ended with, in order. */
  results: StreamRelayResult[];
  nextResult(): Promise<StreamRelayResult>;
  close(): Promise<void>;
}

const opened: Rig[] = [];
afterEach(async () => {
  for (const rig of opened.splice(0)) await rig.close();
});

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function startRig(upstream: (req: IncomingMessage, res: ServerResponse) => void): Promise<Rig> {
  const upstreamServer = createServer(upstream);
  const upstreamUrl = await listen(upstreamServer);
  const agent = new Agent();
  const results: StreamRelayResult[] = [];
  const waiting: ((result: StreamRelayResult) => void)[] = [];
  const hop = createServer((_req, res) => {
    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    void (async () => {
      const head = await dispatchUpstream(
        agent,
        { origin: upstreamUrl, path: '/', method: 'GET' },
        controller.signal,
      );
      if (head.kind !== 'response') {
        res.destroy();
        return;
      }
      const result = await relayStream(res, head, {
        stripUsageOnlyChunks: true,
        signal: controller.signal,
        settle: async () => undefined,
      });
      results.push(result);
      waiting.shift()?.(result);
    })();
  });
  const hopUrl = await listen(hop);
  const rig: Rig = {
    hopUrl,
    results,
    nextResult: () => new Promise((resolve) => waiting.push(resolve)),
    async close() {
      hop.closeAllConnections();
      upstreamServer.closeAllConnections();
      await new Promise((resolve) => hop.close(resolve));
      await new Promise((resolve) => upstreamServer.close(resolve));
      await agent.destroy();
    },
  };
  opened.push(rig);
  return rig;
}

function withResolvers(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

const event = (payload: unknown) => `data: ${JSON.stringify(payload)}\n\n`;
const tokenEvent = (text: string) =>
  event({ choices: [{ index: 0, delta: { content: text } }], usage: null });
const USAGE_EVENT = event({ choices: [], usage: { prompt_tokens: 11, completion_tokens: 7 } });

describe('the response relay (undici dispatch handler → client)', () => {
  it('does not read the whole stream while a client does not read: the upstream is held back until it does', async () => {
    const total = 48 * 1024 * 1024;
    const piece = Buffer.from(tokenEvent('x'.repeat(16 * 1024)));
    const upstreamState = { written: 0, blocked: false, finished: false };
    const blocked = withResolvers();
    const rig = await startRig((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      void (async () => {
        while (upstreamState.written < total) {
          upstreamState.written += piece.length;
          if (!res.write(piece)) {
            upstreamState.blocked = true;
            blocked.resolve();
            await once(res, 'drain');
            upstreamState.blocked = false;
          }
        }
        upstreamState.finished = true;
        res.end();
      })().catch(() => undefined);
    });
    // A plain node:http client that takes the head and then reads nothing: the sockets' buffers fill, then
    // the hop's, then the upstream's writes must report backpressure long before the whole stream is through.
    const result = rig.nextResult();
    const response = await new Promise<IncomingMessage>((resolve, reject) =>
      get(rig.hopUrl, resolve).on('error', reject),
    );
    response.pause();
    await blocked.promise;
    // Held back, not just slowed: the upstream stays blocked on one write, poll after poll, with the
    // socket buffers full. A relay that read on regardless would let it write everything and finish.
    let stalled = 0;
    let lastWritten = -1;
    await vi.waitFor(
      () => {
        const moved = upstreamState.written !== lastWritten;
        lastWritten = upstreamState.written;
        stalled = upstreamState.blocked && !moved ? stalled + 1 : 0;
        expect(stalled).toBeGreaterThanOrEqual(5);
      },
      { timeout: 15_000, interval: 20 },
    );
    expect(upstreamState.finished).toBe(false);
    expect(upstreamState.written).toBeLessThan(total / 2);
    // Once the client reads again, everything arrives, in order and whole.
    let bytes = 0;
    response.on('data', (chunk: Buffer) => (bytes += chunk.length));
    response.resume();
    await once(response, 'end');
    const upstreamBytes = Math.ceil(total / piece.length) * piece.length;
    expect(bytes).toBe(upstreamBytes);
    expect(upstreamState.finished).toBe(true);
    expect((await result).end).toBe('complete');
  });

  it('aborts the upstream request when the client goes away while the relay is held back', async () => {
    const piece = Buffer.from(tokenEvent('y'.repeat(16 * 1024)));
    const blocked = withResolvers();
    const upstreamClosed = withResolvers();
    const rig = await startRig((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.on('close', () => upstreamClosed.resolve());
      void (async () => {
        for (;;) {
          if (res.destroyed) return;
          if (!res.write(piece)) {
            blocked.resolve();
            await once(res, 'drain');
          }
        }
      })().catch(() => undefined);
    });
    const client = new Agent();
    const response = await request(rig.hopUrl, { dispatcher: client });
    response.body.pause();
    await blocked.promise;
    const result = rig.nextResult();
    response.body.destroy();
    await client.destroy();
    await upstreamClosed.promise;
    expect((await result).end).toBe('client_gone');
  });

  it('cuts the client off cleanly when the upstream breaks mid-stream, with what it relayed counted', async () => {
    const rig = await startRig((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(tokenEvent('partial'));
      // The provider's connection dies mid-stream, with no terminating chunk.
      setImmediate(() => res.socket?.destroy());
    });
    const response = await request(rig.hopUrl);
    const received: Buffer[] = [];
    const failure = await (async () => {
      for await (const chunk of response.body) received.push(chunk as Buffer);
    })().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect(Buffer.concat(received).toString()).toBe(tokenEvent('partial'));
    const result = rig.results[0] ?? (await rig.nextResult());
    expect(result.end).toBe('upstream_failed');
    expect(result.bytes).toBe(Buffer.byteLength(tokenEvent('partial')));
  });

  it('strips and counts the usage-only chunk when the upstream splits it across writes', async () => {
    const cut = USAGE_EVENT.indexOf('"usage"') + 3;
    const pieces = [
      tokenEvent('hello'),
      USAGE_EVENT.slice(0, cut),
      USAGE_EVENT.slice(cut),
      'data: [DONE]\n\n',
    ];
    const rig = await startRig((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      void (async () => {
        for (const piece of pieces) {
          // Each piece its own socket write, so the hop reads the usage event in two chunks.
          await new Promise<void>((resolve) => res.write(piece, () => resolve()));
          await new Promise((resolve) => setImmediate(resolve));
        }
        res.end();
      })();
    });
    const response = await request(rig.hopUrl);
    const text = await response.body.text();
    expect(text).toBe(tokenEvent('hello') + 'data: [DONE]\n\n');
    const result = await (rig.results[0] ?? rig.nextResult());
    expect(result).toMatchObject({ end: 'complete', usage: { promptTokens: 11, completionTokens: 7 } });
  });
});
