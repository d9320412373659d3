import { RPC_ERROR_CODES } from '../protocol.ts';

/**
 * An error the peer answered with (or one a handler throws to answer with). `code` is a JSON-RPC
 * error code; see RPC_ERROR_CODES for the protocol's own ones.
 */
export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
    this.data = data;
  }

  /** A typed security denial: policy, Cop or human said no. */
  get isDenial(): boolean {
    return this.code === RPC_ERROR_CODES.denied || this.code === RPC_ERROR_CODES.forbidden;
  }
}

/** The connection ended (or was closed) before the peer answered. Nothing is known about the outcome. */
export class RpcConnectionClosedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RpcConnectionClosedError';
  }
}

/** The peer did not answer within the request's timeout. Nothing is known about the outcome. */
export class RpcTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RpcTimeoutError';
  }
}

/** The text of anything thrown: an Error's message, or the value itself as a string. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
