/**
 * The fake LLM provider of the gateway benchmark, run in its own process (forked by bench-gateway.ts) so
 * that producing a stream never shares an event loop with the gateway or the client. What it answers is
 * chosen by the request's user message, a tag "<kind>:<n>": `small` (a short streamed sentence), `large`
 * (a big stream) or `park` (one content chunk, then silence until the client aborts). It tells the parent
 * when each request was served and when a parked one saw its client go away.
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import {
  lastUserText,
  reply,
  startFakeProvider,
  type FakeRequest,
  type ScriptedResponse,
} from '../../test/fakes/fake-provider.ts';
import { monoMs } from './bench-gateway-client-worker.ts';
import { isMain } from './stats.ts';

export const providerOptionsSchema = z
  .object({
    apiKey: z.string().min(1),
    largeBytes: z.number().int().positive(),
    largeChunkBytes: z.number().int().positive().default(8192),
    smallText: z.string().min(1),
  })
  .strict();
export type ProviderOptions = z.input<typeof providerOptionsSchema>;

export const providerEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready'), baseUrl: z.string().url() }).strict(),
  z
    .object({
      type: z.literal('served'),
      tag: z.string(),
      /** From the request's arrival until its answer was written or aborted. */
      serveMs: z.number(),
      /** CPU time of this process over the same span (user + system), microseconds. */
      cpuUs: z.number(),
      aborted: z.boolean(),
    })
    .strict(),
  /** A parked request saw its client go away, at `atMs` on the shared monotonic clock. */
  z.object({ type: z.literal('aborted'), tag: z.string(), atMs: z.number() }).strict(),
]);
export type ProviderEvent = z.infer<typeof providerEventSchema>;

export const providerCommandSchema = z.object({ op: z.literal('close') }).strict();

async function serve(): Promise<void> {
  const send = process.send?.bind(process);
  if (!send) throw new Error('bench-gateway-provider-worker must be started by bench-gateway.ts (fork)');
  const options = providerOptionsSchema.parse(JSON.parse(process.argv[2] ?? '{}'));
  const emit = (event: ProviderEvent) => send(event);
  // performance.now() and the monotonic clock both come from uv_hrtime here, so their offset is fixed.
  const monoOffset = monoMs() - performance.now();
  const large = 'x'.repeat(options.largeBytes);
  const never = new Promise<never>(() => undefined);

  const answer = (tag: string): ScriptedResponse => {
    const kind = tag.split(':')[0];
    if (kind === 'small') return reply.text(options.smallText);
    if (kind === 'large') return reply.text(large, { chunkSize: options.largeChunkBytes });
    if (kind === 'park') return reply.text('', { chunks: ['a', 'b'], pauseAfterChunks: 1, resume: never });
    return reply.error(400, { body: { error: { message: `unknown bench tag "${tag}"` } } });
  };

  const fake = await startFakeProvider({
    apiKey: options.apiKey,
    responder: (request: FakeRequest) => {
      const tag = lastUserText(request.body);
      const cpu = process.cpuUsage();
      void fake.waitForEnd(request).then(() => {
        const used = process.cpuUsage(cpu);
        emit({
          type: 'served',
          tag,
          serveMs: performance.now() - request.receivedAt,
          cpuUs: used.user + used.system,
          aborted: request.aborted,
        });
      });
      if (tag.startsWith('park:'))
        void fake.waitForAbort(request).then((at) => emit({ type: 'aborted', tag, atMs: at + monoOffset }));
      return answer(tag);
    },
  });

  let closing = false;
  const close = () => {
    if (closing) return;
    closing = true;
    void fake.close().finally(() => {
      if (process.connected) process.disconnect();
    });
  };
  process.on('message', (raw) => {
    if (providerCommandSchema.safeParse(raw).success) close();
  });
  // The parent died or let go: close the server so this process ends too.
  process.on('disconnect', close);
  emit({ type: 'ready', baseUrl: fake.openaiBaseUrl });
}

if (isMain(import.meta.url)) await serve();
