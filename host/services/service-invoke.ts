import { RPC_ERROR_CODES, type RpcErrorCode } from '../../container-agent/src/protocol.ts';
import { RpcError } from '../../container-agent/src/rpc/errors.ts';
import {
  ServiceError,
  type ServiceCallContext,
  type ServiceErrorKind,
  type ServiceRegistry,
} from './service-registry.ts';

const RPC_CODE_OF: Record<ServiceErrorKind, RpcErrorCode> = {
  invalid_params: RPC_ERROR_CODES.invalidParams,
  refused: RPC_ERROR_CODES.denied,
  timeout: RPC_ERROR_CODES.internal,
  aborted: RPC_ERROR_CODES.internal,
  failed: RPC_ERROR_CODES.internal,
};

function describeIssues(error: {
  issues: readonly { path: readonly PropertyKey[]; message: string }[];
}): string {
  return error.issues
    .map((issue) => {
      const where = issue.path.map(String).join('.');
      return where ? `${where}: ${issue.message}` : issue.message;
    })
    .join('; ');
}

/**
 * Looks a service up, validates the container's params with its schema and calls it; every failure
 * becomes an RpcError the agent can read. The trust check and taint marking belong to the caller,
 * which must run them before this (taint is set whether or not the call then succeeds).
 */
export async function invokeService(
  registry: ServiceRegistry,
  name: string,
  rawParams: unknown,
  context: ServiceCallContext,
): Promise<unknown> {
  const service = registry.lookup(name);
  if (!service) {
    const known = registry.names();
    throw new RpcError(
      RPC_ERROR_CODES.invalidParams,
      `there is no service "${name}"; available: ${known.length ? known.join(', ') : 'none'}`,
    );
  }
  const parsed = service.paramsSchema.safeParse(rawParams);
  if (!parsed.success) {
    throw new RpcError(
      RPC_ERROR_CODES.invalidParams,
      `invalid params for ${name}: ${describeIssues(parsed.error)}`,
    );
  }
  try {
    return await service.call(parsed.data, context);
  } catch (error) {
    if (error instanceof ServiceError)
      throw new RpcError(RPC_CODE_OF[error.kind], error.message, { kind: error.kind });
    const message = error instanceof Error ? error.message : String(error);
    throw new RpcError(RPC_ERROR_CODES.internal, `${name} failed: ${message}`);
  }
}
