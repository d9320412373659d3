/**
 * A symmetric JSON-RPC 2.0 peer over newline-delimited streams. Each side serves the methods of its
 * own table and calls those of the other side's table; both tables are the zod schemas of protocol.ts,
 * so params are checked before sending and on receipt, and results are checked on both ends too.
 *
 * The parts: frame-router.ts reads frames, request-dispatch.ts serves this side's methods,
 * pending-calls.ts waits for the other side's answers, frame-writer.ts writes; this file wires them to
 * the streams and checks outgoing calls.
 */
import type { Readable, Writable } from 'node:stream';
import {
  JSONRPC_VERSION,
  MAX_FRAME_BYTES,
  RPC_ERROR_CODES,
  type MethodTable,
  type ParamsIn,
  type ResultOut,
} from '../protocol.ts';
import { RpcConnectionClosedError, RpcError } from './errors.ts';
import { createFrameRouter } from './frame-router.ts';
import { createFrameWriter } from './frame-writer.ts';
import { createLineDecoder } from './line-decoder.ts';
import type { ProtocolProblem, RequestOptions, RpcHandlers, RpcLogger } from './peer-types.ts';
import { createPendingCalls } from './pending-calls.ts';
import { createRequestDispatch } from './request-dispatch.ts';
import { describeZodIssues } from './zod-issues.ts';

export type {
  HandlerContext,
  JsonRpcId,
  ProtocolProblem,
  RequestOptions,
  RpcHandlers,
  RpcLogger,
} from './peer-types.ts';

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

export function createRpcPeer<Local extends MethodTable, Remote extends MethodTable>(
  options: RpcPeerOptions<Local, Remote>,
): RpcPeer<Remote> {
  const { input, output, remoteMethods, logger } = options;
  const maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES;
  let closed = false;

  const report = (problem: ProtocolProblem): void => {
    logger?.warn({ ...problem }, `json-rpc: ${problem.message}`);
    options.onProtocolError?.(problem);
  };
  const writer = createFrameWriter({ output, maxFrameBytes, isClosed: () => closed, report });
  const pending = createPendingCalls({ maxFrameBytes, report });
  const dispatch = createRequestDispatch({
    localMethods: options.localMethods,
    handlers: options.handlers,
    writer,
    report,
    ...(logger ? { logger } : {}),
  });
  const router = createFrameRouter({
    maxFrameBytes,
    writer,
    report,
    dispatch,
    settle: pending.settle,
    ...(logger ? { logger } : {}),
  });
  const decoder = createLineDecoder({ maxFrameBytes, onFrame: router.onFrame, onOversize: router.onOversize });

  const shutdown = (reason: string): void => {
    if (closed) return;
    closed = true;
    decoder.halt();
    input.off('data', onData);
    input.off('end', onEnd);
    input.off('close', onInputClose);
    input.off('error', onInputError);
    output.off('error', onOutputError);
    pending.failAll(reason);
    options.onClose?.(reason);
  };

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

  /** The schema of a remote method with params that pass it; throws the RpcError to answer with otherwise. */
  const checkOutgoing = (method: string, params: unknown) => {
    const spec = remoteMethods[method];
    if (!spec) throw new RpcError(RPC_ERROR_CODES.methodNotFound, `"${method}" is not a method of the peer`);
    const checked = spec.params.safeParse(params);
    if (!checked.success) {
      throw new RpcError(
        RPC_ERROR_CODES.invalidParams,
        `refusing to send invalid params for "${method}": ${describeZodIssues(checked.error)}`,
      );
    }
    return { spec, params: checked.data };
  };

  return {
    request(method, params, requestOptions = {}) {
      const spec = remoteMethods[method];
      if (spec?.notification) {
        return Promise.reject(
          new RpcError(RPC_ERROR_CODES.invalidRequest, `"${method}" is a notification: use notify()`),
        );
      }
      let checked: ReturnType<typeof checkOutgoing>;
      try {
        checked = checkOutgoing(method, params);
      } catch (error) {
        return Promise.reject(error as Error);
      }
      if (closed)
        return Promise.reject(
          new RpcConnectionClosedError(`cannot call "${method}": the connection is closed`),
        );
      return pending.call(method, checked.spec.result, requestOptions, (id) =>
        writer.write({ jsonrpc: JSONRPC_VERSION, id, method, params: checked.params }),
      ) as Promise<ResultOut<Remote, typeof method>>;
    },
    notify(method, params) {
      const checked = checkOutgoing(method, params);
      if (!writer.write({ jsonrpc: JSONRPC_VERSION, method, params: checked.params })) {
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
