import { RPC_ERROR_CODES, type RpcErrorCode } from '../../container-agent/src/protocol.ts';
import { RpcError } from '../../container-agent/src/rpc/errors.ts';
import { DomainError, type DomainErrorKind } from '../errors/domain-error.ts';

const CODE_OF: Record<DomainErrorKind, RpcErrorCode> = {
  invalid: RPC_ERROR_CODES.invalidParams,
  forbidden: RPC_ERROR_CODES.forbidden,
  denied: RPC_ERROR_CODES.denied,
  internal: RPC_ERROR_CODES.internal,
};

/** The one place a domain refusal becomes a JSON-RPC error; anything else passes through unchanged. */
export function toRpcError(error: unknown): unknown {
  if (!(error instanceof DomainError)) return error;
  return new RpcError(CODE_OF[error.kind], error.message, error.data);
}

/** Runs a domain operation for the container, its refusals turned into protocol errors. */
export async function servingDomain<T>(operation: () => Promise<T> | T): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw toRpcError(error);
  }
}

/** The same for every handler of a domain module's table (the task.* methods). */
export function servingDomainHandlers<T extends object>(handlers: T): T {
  const served: Record<string, (...args: never[]) => Promise<unknown>> = {};
  for (const [method, handler] of Object.entries(handlers) as [string, (...args: never[]) => unknown][])
    served[method] = (...args) => servingDomain(() => handler(...args));
  return served as T;
}
