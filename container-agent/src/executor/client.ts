/**
 * The agent's side of the command executor (executor/main.ts): sends each command to it and reads its
 * answers, which come from the commands' principal and are parsed as untrusted. When the executor is gone
 * (a command may kill it: it shares their uid), every pending and later command fails; the agent does not.
 */
import type { Readable, Writable } from 'node:stream';
import { createLineDecoder } from '../rpc/line-decoder.ts';
import type { BashRunOptions, BashRunResult } from '../tools/bash-runner.ts';
import {
  executorReplySchema,
  MAX_CAPTURE_BYTES,
  MAX_EXECUTOR_LINE_BYTES,
  type ExecutorReply,
  type ExecutorRequest,
} from './protocol.ts';

export interface ExecutorIdentity {
  uid: number;
  gid: number;
}

export interface CommandExecutor {
  /** The executor's uid and gid as it reported them when it started; rejects when it never did. */
  readonly identity: Promise<ExecutorIdentity>;
  run(options: BashRunOptions): Promise<BashRunResult>;
}

type Pending = { resolve: (r: BashRunResult) => void; reject: (e: Error) => void };

export function connectCommandExecutor(streams: { input: Readable; output: Writable }): CommandExecutor {
  const pending = new Map<number, Pending>();
  let nextId = 0;
  let gone: Error | undefined;
  let identify: { resolve: (i: ExecutorIdentity) => void; reject: (e: Error) => void } | undefined;
  const identity = new Promise<ExecutorIdentity>((resolve, reject) => (identify = { resolve, reject }));
  // Not every caller asks; a rejection nobody awaits is not an error of the agent's.
  identity.catch(() => undefined);

  const fail = (why: string): void => {
    if (gone) return;
    gone = new Error(`the command executor is gone (${why})`);
    identify?.reject(gone);
    for (const p of pending.values()) p.reject(gone);
    pending.clear();
    streams.input.destroy();
  };
  const onReply = (reply: ExecutorReply): void => {
    if (reply.type === 'hello') {
      // Only the first: a later hello is a command speaking through a hijacked executor.
      identify?.resolve({ uid: reply.uid, gid: reply.gid });
      identify = undefined;
      return;
    }
    const waiting = pending.get(reply.id);
    if (!waiting) return;
    pending.delete(reply.id);
    if (reply.type === 'error') return waiting.reject(new Error(reply.message));
    const { type: _type, id: _id, ...result } = reply;
    waiting.resolve({ ...result, signal: result.signal as NodeJS.Signals | null });
  };
  const decoder = createLineDecoder({
    maxFrameBytes: MAX_EXECUTOR_LINE_BYTES,
    onOversize: () => fail('it sent an oversized line'),
    onFrame: (line) => {
      let reply: ExecutorReply;
      try {
        reply = executorReplySchema.parse(JSON.parse(line));
      } catch {
        return fail('it sent a malformed line');
      }
      onReply(reply);
    },
  });
  streams.input.on('data', (chunk: Buffer) => decoder.push(chunk));
  streams.input.on('end', () => fail('its output ended'));
  streams.input.on('error', (error) => fail(error.message));
  streams.output.on('error', (error) => fail(error.message));

  const send = (request: ExecutorRequest): void => void streams.output.write(JSON.stringify(request) + '\n');

  return {
    identity,
    run(options) {
      if (gone) return Promise.reject(gone);
      const id = nextId++;
      const { signal } = options;
      return new Promise<BashRunResult>((resolve, reject) => {
        const onAbort = () => send({ type: 'abort', id });
        const settle =
          <T>(done: (value: T) => void) =>
          (value: T) => {
            signal.removeEventListener('abort', onAbort);
            done(value);
          };
        pending.set(id, { resolve: settle(resolve), reject: settle(reject) });
        send({
          type: 'run',
          id,
          command: options.command,
          cwd: options.cwd,
          env: Object.fromEntries(
            Object.entries(options.env).filter((e): e is [string, string] => e[1] !== undefined),
          ),
          timeoutMs: options.timeoutMs,
          maxOutputBytes: Math.min(options.maxOutputBytes, MAX_CAPTURE_BYTES),
        });
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      });
    },
  };
}
