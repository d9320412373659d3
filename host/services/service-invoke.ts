import { DomainError, type DomainErrorKind } from '../errors/domain-error.ts';
import {
  ServiceError,
  type ServiceCallContext,
  type ServiceErrorKind,
  type ServiceRegistry,
} from './service-registry.ts';
import { errorMessage } from '../errors/error-message.ts';
import { describeZodIssues } from '../../container-agent/src/rpc/zod-issues.ts';

const DOMAIN_KIND_OF: Record<ServiceErrorKind, DomainErrorKind> = {
  invalid_params: 'invalid',
  refused: 'denied',
  timeout: 'internal',
  aborted: 'internal',
  failed: 'internal',
};

/**
 * Looks a service up, validates the container's params with its schema and calls it; every failure
 * becomes a DomainError the agent can read (host/ipc gives it its protocol code). The trust check and taint marking belong to the caller,
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
    throw new DomainError(
      'invalid',
      `there is no service "${name}"; available: ${known.length ? known.join(', ') : 'none'}`,
    );
  }
  const parsed = service.paramsSchema.safeParse(rawParams);
  if (!parsed.success) {
    throw new DomainError('invalid', `invalid params for ${name}: ${describeZodIssues(parsed.error)}`);
  }
  try {
    return await service.call(parsed.data, context);
  } catch (error) {
    throw serviceFailure(name, error);
  }
}

/** A service's failure as the DomainError the agent reads; one already translated passes unchanged. */
export function serviceFailure(name: string, error: unknown): DomainError {
  if (error instanceof DomainError) return error;
  if (error instanceof ServiceError)
    return new DomainError(DOMAIN_KIND_OF[error.kind], error.message, { kind: error.kind });
  return new DomainError('internal', `${name} failed: ${errorMessage(error)}`);
}
