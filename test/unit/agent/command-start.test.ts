/**
 * createCommandStart (run/command-start.ts): the run's command side starts once a request has been out a
 * while without its answer, or at once for an answer that asks for tools; never for a text answer that came
 * before that.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { CompletionResponse } from '../../../container-agent/src/llm/chat-model.ts';
import { createCommandStart } from '../../../container-agent/src/run/command-start.ts';

let server: http.Server | undefined;
afterEach(() => server?.close());

/** A server that has the whole request before it answers, and answers only when told. */
async function holdingServer() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => void released.then(() => res.end('ok')));
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, release };
}

const text = (content: string): CompletionResponse => ({
  content,
  toolCalls: [],
  finishReason: 'stop',
  usage: { promptTokens: 1, completionTokens: 1 },
});
const toolCall: CompletionResponse = {
  content: null,
  toolCalls: [{ id: 'c1', name: 'bash', arguments: '{"command":"ls"}' }],
  finishReason: 'tool_calls',
  usage: { promptTokens: 1, completionTokens: 1 },
};

/** Lets every pending immediate and the promise reactions before it run. */
const drained = () => new Promise((resolve) => setImmediate(() => setImmediate(resolve)));

describe('the command side of a run', () => {
  it('starts while a sent request still waits for its answer, and only once', async () => {
    const { url, release } = await holdingServer();
    let starts = 0;
    let started!: () => void;
    const hasStarted = new Promise<void>((resolve) => (started = resolve));
    const commands = createCommandStart({
      start: () => {
        starts++;
        started();
      },
      afterMs: 1,
    });
    const answer = fetch(url, { method: 'POST', body: 'x'.repeat(10_000) }).then(async (r) =>
      text(await r.text()),
    );
    commands.requested(answer);
    await hasStarted;
    release();
    expect((await answer).content).toBe('ok');
    commands.requested(Promise.resolve(toolCall));
    await drained();
    expect(starts).toBe(1);
  });

  it('does not start for a text answer that came before the wait was over', async () => {
    let starts = 0;
    const commands = createCommandStart({ start: () => starts++, afterMs: 60_000 });
    const answer = Promise.resolve(text('Noted.'));
    commands.requested(answer);
    await answer;
    await drained();
    expect(starts).toBe(0);
  });

  it('does not start for a request that failed', async () => {
    let starts = 0;
    const commands = createCommandStart({ start: () => starts++, afterMs: 60_000 });
    const answer = Promise.reject(new Error('the gateway refused it'));
    commands.requested(answer);
    await answer.catch(() => undefined);
    await drained();
    expect(starts).toBe(0);
  });

  it('starts at once for an answer that asks for a tool', async () => {
    let starts = 0;
    const commands = createCommandStart({ start: () => starts++, afterMs: 60_000 });
    const answer = Promise.resolve(toolCall);
    commands.requested(answer);
    await answer;
    // The loop runs the tool right after the answer: the command side has started by then.
    expect(starts).toBe(1);
  });
});
