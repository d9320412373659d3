/**
 * afterRequestSent (llm/request-sent.ts): the work that waits for a run's first LLM request starts once
 * that request has left the process, before its answer, and at the latest when the call settles.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { afterRequestSent } from '../../../container-agent/src/llm/request-sent.ts';

let server: http.Server | undefined;
afterEach(() => server?.close());

/** A server that has the whole request before it answers, and answers only when told. */
async function holdingServer() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let received!: () => void;
  const hasRequest = new Promise<void>((resolve) => (received = resolve));
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received();
      void released.then(() => res.end('ok'));
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, hasRequest, release };
}

describe('after a request is sent', () => {
  it('runs once the request body is written, while its answer is still to come', async () => {
    const { url, hasRequest, release } = await holdingServer();
    const events: string[] = [];
    const answer = fetch(url, { method: 'POST', body: 'x'.repeat(100_000) }).then(async (r) => {
      events.push('answered');
      return r.text();
    });
    const ran = new Promise<void>((resolve) =>
      afterRequestSent(answer, () => {
        events.push('ran');
        resolve();
      }),
    );
    await Promise.all([ran, hasRequest]);
    expect(events).toEqual(['ran']);
    release();
    expect(await answer).toBe('ok');
    expect(events).toEqual(['ran', 'answered']);
  });

  it('runs when the call settles without a request of node’s fetch, and only once', async () => {
    let calls = 0;
    const settled = Promise.reject(new Error('refused before sending'));
    await new Promise<void>((resolve) =>
      afterRequestSent(settled, () => {
        calls++;
        resolve();
      }),
    );
    // A later request of another call does not run it again.
    const { url, release } = await holdingServer();
    release();
    await (await fetch(url, { method: 'POST', body: 'y' })).text();
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toBe(1);
  });
});
