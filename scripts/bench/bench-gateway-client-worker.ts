/**
 * The client side of the gateway benchmark, run in its own process (forked by bench-gateway.ts) so that
 * reading a stream never competes with the gateway or the provider for one event loop. The parent sends
 * one command at a time over the IPC channel and gets one result back; timings are taken here.
 */
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { z } from 'zod';
import { isMain } from './stats.ts';
import { errorMessage } from '../../host/errors/error-message.ts';

/**
 * Milliseconds on the system-wide monotonic clock (CLOCK_MONOTONIC under libuv), so times taken in
 * different processes of this machine can be subtracted from each other.
 */
export const monoMs = (): number => Number(process.hrtime.bigint()) / 1e6;

const target = { url: z.string().url(), key: z.string().min(1), tag: z.string().min(1) };

export const clientCommandSchema = z.discriminatedUnion('op', [
  /** Streams one chat completion to the end. */
  z.object({ op: z.literal('stream'), id: z.number().int(), ...target }).strict(),
  /** Reads until the first content chunk, then aborts; reports when it aborted. */
  z.object({ op: z.literal('abort'), id: z.number().int(), ...target }).strict(),
  z.object({ op: z.literal('close') }).strict(),
]);
export type ClientCommand = z.infer<typeof clientCommandSchema>;

export const clientResultSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('ready') }).strict(),
  z
    .object({
      kind: z.literal('stream'),
      id: z.number().int(),
      ttfbMs: z.number(),
      totalMs: z.number(),
      bytes: z.number().int(),
      status: z.number().int(),
      /** CPU time this process spent on the request (user + system), microseconds. */
      cpuUs: z.number(),
    })
    .strict(),
  z.object({ kind: z.literal('abort'), id: z.number().int(), abortedAtMs: z.number() }).strict(),
  z.object({ kind: z.literal('error'), id: z.number().int(), message: z.string() }).strict(),
]);
export type ClientResult = z.infer<typeof clientResultSchema>;

/** The tag travels as the user message, so the provider process knows what to answer and whom. */
function chat(dispatcher: Agent, cmd: { url: string; key: string; tag: string }, signal?: AbortSignal) {
  return request(`${cmd.url}/chat/completions`, {
    dispatcher,
    method: 'POST',
    signal,
    headers: { authorization: `Bearer ${cmd.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'fake-model',
      stream: true,
      messages: [{ role: 'user', content: cmd.tag }],
    }),
  });
}

async function stream(dispatcher: Agent, cmd: { id: number; url: string; key: string; tag: string }) {
  const cpu = process.cpuUsage();
  const start = performance.now();
  const response = await chat(dispatcher, cmd);
  let ttfb = 0;
  let bytes = 0;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    if (bytes === 0) ttfb = performance.now() - start;
    bytes += chunk.length;
  }
  const totalMs = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return {
    kind: 'stream' as const,
    id: cmd.id,
    ttfbMs: ttfb,
    totalMs,
    bytes,
    status: response.statusCode,
    cpuUs: used.user + used.system,
  };
}

async function abortMidStream(dispatcher: Agent, cmd: { id: number; url: string; key: string; tag: string }) {
  const controller = new AbortController();
  const response = await chat(dispatcher, cmd, controller.signal);
  const iterator = (response.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  let seen = '';
  // The provider parks after the first content chunk ("a"); once it is here the stream is mid-flight.
  while (!seen.includes('"a"')) {
    const next = await iterator.next();
    if (next.done)
      throw new Error(`stream ended before the first content chunk (HTTP ${response.statusCode})`);
    seen += (next.value as Buffer).toString();
  }
  const abortedAtMs = monoMs();
  controller.abort();
  await iterator.return?.().catch(() => undefined);
  return { kind: 'abort' as const, id: cmd.id, abortedAtMs };
}

function serve(): void {
  const send = process.send?.bind(process);
  if (!send) throw new Error('bench-gateway-client-worker must be started by bench-gateway.ts (fork)');
  const dispatcher = new Agent({ keepAliveTimeout: 30_000 });
  const reply = (result: ClientResult) => send(result);
  process.on('message', (raw) => {
    const parsed = clientCommandSchema.safeParse(raw);
    if (!parsed.success) {
      reply({ kind: 'error', id: -1, message: `bad command: ${parsed.error.message}` });
      return;
    }
    const cmd = parsed.data;
    if (cmd.op === 'close') {
      void dispatcher.destroy().finally(() => process.disconnect());
      return;
    }
    const run = cmd.op === 'stream' ? stream(dispatcher, cmd) : abortMidStream(dispatcher, cmd);
    run.then(reply, (error: unknown) => reply({ kind: 'error', id: cmd.id, message: errorMessage(error) }));
  });
  // The parent went away (or closed us): nothing more to do.
  process.on('disconnect', () => {
    void dispatcher.destroy().catch(() => undefined);
  });
  reply({ kind: 'ready' });
}

if (isMain(import.meta.url)) serve();
