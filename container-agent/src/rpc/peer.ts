/**
 * A symmetric JSON-RPC 2.0 peer over newline-delimited streams. Each side serves the methods of its
 * own table and calls those of the other side's table; both tables are the zod schemas of protocol.ts,
 * so params are checked before sending and on receipt, and results are checked on both ends too.
 */
import type { Readable, Writable } from 'node:stream';
import type * as z from 'zod/mini';
import {
  JSONRPC_VERSION,
  MAX_FRAME_BYTES,
  RPC_ERROR_CODES,
  type MethodTable,
  type ParamsIn,
  type ParamsOut,
  type ResultIn,
  type ResultOut,
} from '../protocol.ts';
import { RpcConnectionClosedError, RpcError, RpcTimeoutError } from './errors.ts';
import { createLineDecoder, type OversizeReport } from './line-decoder.ts';
import { errorMessage } from './errors.ts';
import { describeZodIssues } from './zod-issues.ts';

export type JsonRpcId = number | string;

export interface HandlerContext {
  method: string;
  /** Null for notifications. */
  id: JsonRpcId | null;
}

export type RpcHandlers<T extends MethodTable> = {
  [M in keyof T & string]: (
    params: ParamsOut<T, M>,
    context: HandlerContext,
  ) => Promise<ResultIn<T, M>> | ResultIn<T, M>;
};

/** Pino-compatible: `logger.warn({ ...details }, 'message')`. */
export interface RpcLogger {
  warn(details: object, message: string): void;
  debug?(details: object, message: string): void;
}

export interface ProtocolProblem {
  kind:
    | 'parse-error'
    | 'invalid-request'
    | 'unknown-method'
    | 'invalid-params'
    | 'invalid-result'
    | 'handler-error'
    | 'frame-too-large'
    | 'unknown-response-id'
    | 'error-without-id'
    | 'output-error';
  message: string;
  method?: string;
  id?: JsonRpcId | null;
}

export interface RequestOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface RpcPeerOptions<Local extends MethodTable, Remote extends MethodTable> {
  input: Readable;
  output: Writable;
  /** Schemas of the methods this side serves. */
  localMethods: Local;
  handlers: RpcHandlers<Local>;
  /** Schemas of the methods this side calls: outgoing params and incoming results are checked against them. */
  remoteMethods: Remote;
  maxFrameBytes?: number;
  /** Malformed or unexpected traffic in either direction; the connection goes on. */
  onProtocolError?: (problem: ProtocolProblem) => void;
  /** The input ended or failed, the output failed, or close() was called. Called once. */
  onClose?: (reason: string) => void;
  logger?: RpcLogger;
}

export interface RpcPeer<Remote extends MethodTable> {
  request<M extends keyof Remote & string>(
    method: M,
    params: ParamsIn<Remote, M>,
    options?: RequestOptions,
  ): Promise<ResultOut<Remote, M>>;
  notify<M extends keyof Remote & string>(method: M, params: ParamsIn<Remote, M>): void;
  /** Stops reading, fails pending requests. The streams stay open: their owner ends them. */
  close(reason?: string): void;
  readonly closed: boolean;
}

type AnyHandler = (params: unknown, context: HandlerContext) => unknown;

interface Pending {
  method: string;
  resultSchema: z.ZodMiniType;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  cleanup: () => void;
}

const MAX_ERROR_MESSAGE = 500;

export function createRpcPeer<Local extends MethodTable, Remote extends MethodTable>(
  options: RpcPeerOptions<Local, Remote>,
): RpcPeer<Remote> {
  const { input, output, localMethods, handlers, remoteMethods, logger } = options;
  const maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES;
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let closed = false;

  const report = (problem: ProtocolProblem): void => {
    logger?.warn({ ...problem }, `json-rpc: ${problem.message}`);
    options.onProtocolError?.(problem);
  };

  /** Serializes and writes one frame; returns false if it was too large to send. */
  const writeFrame = (frame: object): boolean => {
    if (closed) return true;
    const line = JSON.stringify(frame);
    if (Buffer.byteLength(line, 'utf8') > maxFrameBytes) return false;
    output.write(line + '\n');
    return true;
  };

  const sendError = (id: JsonRpcId | null, code: number, message: string): void => {
    writeFrame({
      jsonrpc: JSONRPC_VERSION,
      id,
      error: { code, message: truncate(message, MAX_ERROR_MESSAGE) },
    });
  };

  const sendResult = (id: JsonRpcId, method: string, result: unknown): void => {
    const frame = { jsonrpc: JSONRPC_VERSION, id, result: result ?? null };
    if (!writeFrame(frame)) {
      report({
        kind: 'frame-too-large',
        message: `the result of "${method}" is larger than ${maxFrameBytes} bytes`,
        method,
        id,
      });
      sendError(
        id,
        RPC_ERROR_CODES.frameTooLarge,
        `the result of "${method}" is larger than the ${maxFrameBytes}-byte frame limit`,
      );
    }
  };

  const shutdown = (reason: string): void => {
    if (closed) return;
    closed = true;
    decoder.halt();
    input.off('data', onData);
    input.off('end', onEnd);
    input.off('close', onInputClose);
    input.off('error', onInputError);
    output.off('error', onOutputError);
    for (const [id, entry] of pending) {
      pending.delete(id);
      entry.cleanup();
      entry.reject(new RpcConnectionClosedError(`no reply to "${entry.method}": ${reason}`));
    }
    options.onClose?.(reason);
  };

  const handleRequest = async (id: JsonRpcId | null, method: string, rawParams: unknown): Promise<void> => {
    const isNotification = id === null;
    const spec = Object.prototype.hasOwnProperty.call(localMethods, method)
      ? localMethods[method]
      : undefined;
    const handler = spec
      ? (handlers as unknown as Record<string, AnyHandler | undefined>)[method]
      : undefined;
    if (!spec || !handler) {
      report({ kind: 'unknown-method', message: `unknown method "${truncate(method, 100)}"`, method, id });
      if (!isNotification)
        sendError(id, RPC_ERROR_CODES.methodNotFound, `method "${truncate(method, 100)}" does not exist`);
      return;
    }
    const parsed = spec.params.safeParse(rawParams);
    if (!parsed.success) {
      const message = `invalid params for "${method}": ${describeZodIssues(parsed.error)}`;
      report({ kind: 'invalid-params', message, method, id });
      if (!isNotification) sendError(id, RPC_ERROR_CODES.invalidParams, message);
      return;
    }
    let result: unknown;
    try {
      result = await handler(parsed.data, { method, id });
    } catch (error) {
      if (isNotification) {
        report({
          kind: 'handler-error',
          message: `handler of "${method}" failed: ${errorMessage(error)}`,
          method,
          id,
        });
        return;
      }
      if (error instanceof RpcError) {
        sendError(id, error.code, error.message);
      } else {
        // Internal details (stacks, paths) stay in this process's log.
        logger?.warn({ method, error: errorMessage(error) }, 'json-rpc: handler threw');
        sendError(id, RPC_ERROR_CODES.internal, `internal error while handling "${method}"`);
      }
      return;
    }
    if (isNotification) return;
    const checked = spec.result.safeParse(result);
    if (!checked.success) {
      const message = `handler of "${method}" returned an invalid result: ${describeZodIssues(checked.error)}`;
      report({ kind: 'invalid-result', message, method, id });
      sendError(id, RPC_ERROR_CODES.internal, `internal error while handling "${method}"`);
      return;
    }
    sendResult(id, method, checked.data);
  };

  const handleResponse = (frame: Record<string, unknown>): void => {
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
    if ('error' in frame) {
      if (!isErrorObject(frame.error)) {
        report({
          kind: 'invalid-request',
          message: `malformed error object in the response to "${entry.method}"`,
          id: id as number,
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
      report({ kind: 'invalid-result', message, method: entry.method, id: id as number });
      entry.reject(new RpcError(RPC_ERROR_CODES.internal, message));
      return;
    }
    entry.resolve(checked.data);
  };

  const onFrame = (line: string): void => {
    let frame: unknown;
    try {
      frame = JSON.parse(line);
    } catch {
      report({ kind: 'parse-error', message: 'a frame that is not valid JSON', id: null });
      sendError(null, RPC_ERROR_CODES.parseError, 'parse error: the frame is not valid JSON');
      return;
    }
    if (Array.isArray(frame)) {
      report({ kind: 'invalid-request', message: 'a batch frame (not supported)', id: null });
      sendError(null, RPC_ERROR_CODES.invalidRequest, 'invalid request: batches are not supported');
      return;
    }
    if (!isRecord(frame) || frame.jsonrpc !== JSONRPC_VERSION) {
      const id = isRecord(frame) && isValidId(frame.id) ? frame.id : null;
      report({ kind: 'invalid-request', message: 'a frame that is not a JSON-RPC 2.0 object', id });
      sendError(
        id,
        RPC_ERROR_CODES.invalidRequest,
        'invalid request: expected a JSON object with "jsonrpc": "2.0"',
      );
      return;
    }
    if ('method' in frame) {
      if (typeof frame.method !== 'string') {
        const id = isValidId(frame.id) ? frame.id : null;
        report({ kind: 'invalid-request', message: 'a request whose method is not a string', id });
        sendError(id, RPC_ERROR_CODES.invalidRequest, 'invalid request: "method" must be a string');
        return;
      }
      if ('id' in frame && !isValidId(frame.id)) {
        report({ kind: 'invalid-request', message: 'a request with an invalid id', id: null });
        sendError(
          null,
          RPC_ERROR_CODES.invalidRequest,
          'invalid request: "id" must be a string or an integer',
        );
        return;
      }
      const id = 'id' in frame ? (frame.id as JsonRpcId) : null;
      void handleRequest(id, frame.method, frame.params).catch((error: unknown) => {
        logger?.warn(
          { method: frame.method, error: errorMessage(error) },
          'json-rpc: request handling failed',
        );
      });
      return;
    }
    if ('result' in frame || 'error' in frame) {
      handleResponse(frame);
      return;
    }
    const id = isValidId(frame.id) ? frame.id : null;
    report({ kind: 'invalid-request', message: 'a frame that is neither a request nor a response', id });
    sendError(id, RPC_ERROR_CODES.invalidRequest, 'invalid request: expected "method", "result" or "error"');
  };

  const onOversize = (overflow: OversizeReport): void => {
    const id = idFromPrefix(overflow.prefix);
    report({
      kind: 'frame-too-large',
      message: `a frame of ${overflow.bytes} bytes (limit ${maxFrameBytes}) was dropped`,
      id,
    });
    // A request whose id we can read gets its error, so its caller does not wait for a timeout.
    sendError(
      id,
      RPC_ERROR_CODES.frameTooLarge,
      `frame too large: ${overflow.bytes} bytes, the limit is ${maxFrameBytes}`,
    );
  };

  const decoder = createLineDecoder({ maxFrameBytes, onFrame, onOversize });
  const onData = (chunk: Buffer | string): void => decoder.push(chunk);
  const onEnd = (): void => {
    decoder.end();
    shutdown('the input stream ended');
  };
  const onInputClose = (): void => shutdown('the input stream closed');
  const onInputError = (error: Error): void => shutdown(`the input stream failed: ${error.message}`);
  const onOutputError = (error: Error): void => {
    report({ kind: 'output-error', message: `writing failed: ${error.message}` });
    shutdown(`the output stream failed: ${error.message}`);
  };

  input.on('data', onData);
  input.on('end', onEnd);
  input.on('close', onInputClose);
  input.on('error', onInputError);
  output.on('error', onOutputError);

  return {
    request(method, params, requestOptions = {}) {
      const spec = remoteMethods[method];
      if (!spec)
        return Promise.reject(
          new RpcError(RPC_ERROR_CODES.methodNotFound, `"${method}" is not a method of the peer`),
        );
      if (spec.notification) {
        return Promise.reject(
          new RpcError(RPC_ERROR_CODES.invalidRequest, `"${method}" is a notification: use notify()`),
        );
      }
      const checked = spec.params.safeParse(params);
      if (!checked.success) {
        return Promise.reject(
          new RpcError(
            RPC_ERROR_CODES.invalidParams,
            `refusing to send invalid params for "${method}": ${describeZodIssues(checked.error)}`,
          ),
        );
      }
      if (closed)
        return Promise.reject(
          new RpcConnectionClosedError(`cannot call "${method}": the connection is closed`),
        );
      const { signal, timeoutMs } = requestOptions;
      if (signal?.aborted) return Promise.reject(abortError(signal, method));

      const id = nextId++;
      return new Promise<ResultOut<Remote, typeof method>>((resolve, reject) => {
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
        pending.set(id, {
          method,
          resultSchema: spec.result,
          resolve: resolve as (v: unknown) => void,
          reject,
          cleanup,
        });
        const sent = writeFrame({ jsonrpc: JSONRPC_VERSION, id, method, params: checked.data });
        if (!sent) {
          pending.delete(id);
          cleanup();
          reject(
            new RpcError(
              RPC_ERROR_CODES.frameTooLarge,
              `the request "${method}" is larger than the ${maxFrameBytes}-byte frame limit`,
            ),
          );
        }
      });
    },
    notify(method, params) {
      const spec = remoteMethods[method];
      if (!spec)
        throw new RpcError(RPC_ERROR_CODES.methodNotFound, `"${method}" is not a method of the peer`);
      const checked = spec.params.safeParse(params);
      if (!checked.success) {
        throw new RpcError(
          RPC_ERROR_CODES.invalidParams,
          `refusing to send invalid params for "${method}": ${describeZodIssues(checked.error)}`,
        );
      }
      if (!writeFrame({ jsonrpc: JSONRPC_VERSION, method, params: checked.data })) {
        throw new RpcError(
          RPC_ERROR_CODES.frameTooLarge,
          `the notification "${method}" is larger than the ${maxFrameBytes}-byte frame limit`,
        );
      }
    },
    close(reason = 'closed locally') {
      shutdown(reason);
    },
    get closed() {
      return closed;
    },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isValidId(value: unknown): value is JsonRpcId {
  return (
    (typeof value === 'number' && Number.isSafeInteger(value)) ||
    (typeof value === 'string' && value.length <= 128)
  );
}

function isErrorObject(value: unknown): value is { code: number; message: string; data?: unknown } {
  return isRecord(value) && Number.isInteger(value.code) && typeof value.message === 'string';
}

/**
 * Reads the id of a dropped frame from its first bytes, but only in the canonical layout this peer
 * writes ({"jsonrpc":"2.0","id":…} or {"id":…}), so an "id" nested in params is never mistaken for it.
 */
function idFromPrefix(prefix: string): JsonRpcId | null {
  const match =
    /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,15}|"[^"\\]{0,128}")\s*[,}]/.exec(prefix);
  if (!match?.[1]) return null;
  const raw = match[1];
  return raw.startsWith('"') ? raw.slice(1, -1) : Number(raw);
}

function abortError(signal: AbortSignal, method: string): Error {
  const reason: unknown = signal.reason;
  const detail = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : 'aborted';
  const error = new Error(`"${method}" was abandoned: ${detail}`);
  error.name = 'AbortError';
  return error;
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
