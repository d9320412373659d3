/**
 * The peer's serving side: a request or notification for one of this side's methods reaches its handler
 * only with params its schema accepts, and its result goes back only if the schema accepts that too.
 * Handler internals (stacks, paths) never reach the other side.
 */
import { RPC_ERROR_CODES, type MethodTable } from '../protocol.ts';
import { RpcError, errorMessage } from './errors.ts';
import { truncate } from './frame-shape.ts';
import type { FrameWriter } from './frame-writer.ts';
import type { HandlerContext, JsonRpcId, ReportProblem, RpcHandlers, RpcLogger } from './peer-types.ts';
import { describeZodIssues } from './zod-issues.ts';

type AnyHandler = (params: unknown, context: HandlerContext) => unknown;

export interface RequestDispatchDeps<Local extends MethodTable> {
  localMethods: Local;
  handlers: RpcHandlers<Local>;
  writer: FrameWriter;
  report: ReportProblem;
  logger?: RpcLogger;
}

/** Serves one request (`id` set) or notification (`id` null); resolves once its answer is written. */
export type DispatchRequest = (id: JsonRpcId | null, method: string, rawParams: unknown) => Promise<void>;

export function createRequestDispatch<Local extends MethodTable>(
  deps: RequestDispatchDeps<Local>,
): DispatchRequest {
  const { localMethods, writer, report, logger } = deps;
  const handlers = deps.handlers as unknown as Record<string, AnyHandler | undefined>;

  const failed = (id: JsonRpcId | null, method: string, error: unknown): void => {
    if (id === null) {
      report({
        kind: 'handler-error',
        message: `handler of "${method}" failed: ${errorMessage(error)}`,
        method,
        id,
      });
      return;
    }
    if (error instanceof RpcError) {
      writer.sendError(id, error.code, error.message);
      return;
    }
    // Internal details (stacks, paths) stay in this process's log.
    logger?.warn({ method, error: errorMessage(error) }, 'json-rpc: handler threw');
    writer.sendError(id, RPC_ERROR_CODES.internal, `internal error while handling "${method}"`);
  };

  return async (id, method, rawParams) => {
    const isNotification = id === null;
    const spec = Object.prototype.hasOwnProperty.call(localMethods, method) ? localMethods[method] : undefined;
    const handler = spec ? handlers[method] : undefined;
    if (!spec || !handler) {
      report({ kind: 'unknown-method', message: `unknown method "${truncate(method, 100)}"`, method, id });
      if (!isNotification)
        writer.sendError(id, RPC_ERROR_CODES.methodNotFound, `method "${truncate(method, 100)}" does not exist`);
      return;
    }
    const parsed = spec.params.safeParse(rawParams);
    if (!parsed.success) {
      const message = `invalid params for "${method}": ${describeZodIssues(parsed.error)}`;
      report({ kind: 'invalid-params', message, method, id });
      if (!isNotification) writer.sendError(id, RPC_ERROR_CODES.invalidParams, message);
      return;
    }
    let result: unknown;
    try {
      result = await handler(parsed.data, { method, id });
    } catch (error) {
      failed(id, method, error);
      return;
    }
    if (isNotification) return;
    const checked = spec.result.safeParse(result);
    if (!checked.success) {
      const message = `handler of "${method}" returned an invalid result: ${describeZodIssues(checked.error)}`;
      report({ kind: 'invalid-result', message, method, id });
      writer.sendError(id, RPC_ERROR_CODES.internal, `internal error while handling "${method}"`);
      return;
    }
    writer.sendResult(id, method, checked.data);
  };
}
