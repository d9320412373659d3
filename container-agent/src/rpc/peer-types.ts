/** The shapes a JSON-RPC peer and its parts share: handlers, problems reported, the logger it writes to. */
import type { MethodTable, ResultIn, ParamsOut } from '../protocol.ts';

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

/** Logs a problem and passes it to the peer's owner. */
export type ReportProblem = (problem: ProtocolProblem) => void;
