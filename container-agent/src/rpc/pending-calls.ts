/**
 * The peer's outstanding requests: each under its own id until its answer arrives, its timeout runs out,
 * its signal aborts or the connection closes, whichever is first. An answer's result is checked against
 * the method's schema before its caller sees it.
 */
import type * as z from 'zod/mini';
import { RPC_ERROR_CODES } from '../protocol.ts';
import { RpcConnectionClosedError, RpcError, RpcTimeoutError } from './errors.ts';
import { MAX_ERROR_MESSAGE, isErrorObject, truncate } from './frame-shape.ts';
import type { JsonRpcId, ReportProblem, RequestOptions } from './peer-types.ts';
import { describeZodIssues } from './zod-issues.ts';

export interface PendingCalls {
  /**
   * Registers a call under a fresh id and sends it with `send` (false: the frame was too large); the
   * promise settles with the checked result or the reason there is none.
   */
  call(
    method: string,
    resultSchema: z.ZodMiniType,
    options: RequestOptions,
    send: (id: number) => boolean,
  ): Promise<unknown>;
  /** Settles the call a response frame answers, or reports a response nobody asked for. */
  settle(frame: Record<string, unknown>): void;
  /** Fails every outstanding call: the connection is gone. */
  failAll(reason: string): void;
}

interface Pending {
  method: string;
  resultSchema: z.ZodMiniType;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  cleanup: () => void;
}

export function createPendingCalls(deps: { maxFrameBytes: number; report: ReportProblem }): PendingCalls {
  const { report } = deps;
  const pending = new Map<number, Pending>();
  let nextId = 1;

  const call: PendingCalls['call'] = (method, resultSchema, { signal, timeoutMs }, send) => {
    if (signal?.aborted) return Promise.reject(abortError(signal, method));
    const id = nextId++;
    return new Promise<unknown>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = (): void => {
        pending.delete(id);
        cleanup();
        reject(abortError(signal as AbortSignal, method));
      };
      const cleanup = (): void => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          pending.delete(id);
          cleanup();
          reject(new RpcTimeoutError(`no reply to "${method}" within ${timeoutMs} ms`));
        }, timeoutMs);
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      pending.set(id, { method, resultSchema, resolve, reject, cleanup });
      if (!send(id)) {
        pending.delete(id);
        cleanup();
        reject(
          new RpcError(
            RPC_ERROR_CODES.frameTooLarge,
            `the request "${method}" is larger than the ${deps.maxFrameBytes}-byte frame limit`,
          ),
        );
      }
    });
  };

  const settle = (frame: Record<string, unknown>): void => {
    const id = frame.id;
    if (id === null || id === undefined) {
      const message = isErrorObject(frame.error) ? frame.error.message : 'a response without id';
      report({
        kind: 'error-without-id',
        message: `peer reported: ${truncate(String(message), MAX_ERROR_MESSAGE)}`,
        id: null,
      });
      return;
    }
    const entry = typeof id === 'number' ? pending.get(id) : undefined;
    if (!entry) {
      report({
        kind: 'unknown-response-id',
        message: `a response for unknown request id ${truncate(JSON.stringify(id), 80)}`,
        id: id as JsonRpcId,
      });
      return;
    }
    pending.delete(id as number);
    entry.cleanup();
    answer(entry, id as number, frame);
  };

  const answer = (entry: Pending, id: number, frame: Record<string, unknown>): void => {
    if ('error' in frame) {
      if (!isErrorObject(frame.error)) {
        report({
          kind: 'invalid-request',
          message: `malformed error object in the response to "${entry.method}"`,
          id,
        });
        entry.reject(new RpcError(RPC_ERROR_CODES.internal, `malformed error response to "${entry.method}"`));
        return;
      }
      entry.reject(new RpcError(frame.error.code, frame.error.message, frame.error.data));
      return;
    }
    const checked = entry.resultSchema.safeParse(frame.result);
    if (!checked.success) {
      const message = `invalid result for "${entry.method}": ${describeZodIssues(checked.error)}`;
      report({ kind: 'invalid-result', message, method: entry.method, id });
      entry.reject(new RpcError(RPC_ERROR_CODES.internal, message));
      return;
    }
    entry.resolve(checked.data);
  };

  const failAll = (reason: string): void => {
    for (const [id, entry] of pending) {
      pending.delete(id);
      entry.cleanup();
      entry.reject(new RpcConnectionClosedError(`no reply to "${entry.method}": ${reason}`));
    }
  };

  return { call, settle, failAll };
}

function abortError(signal: AbortSignal, method: string): Error {
  const reason: unknown = signal.reason;
  const detail = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : 'aborted';
  const error = new Error(`"${method}" was abandoned: ${detail}`);
  error.name = 'AbortError';
  return error;
}
