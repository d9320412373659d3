import type { z } from 'zod';
import type { ServiceTrust } from './service-trust.ts';

export interface ServiceCallContext {
  /** Aborted when the run ends or the container goes away. */
  signal: AbortSignal;
  runId: number;
  groupId: string;
}

/** A host-side tool a container may call through `service.call`. */
export interface HostService<P = unknown> {
  name: string;
  /** What the service itself declares; the owner's config may only tighten it. */
  builtinTrust: ServiceTrust;
  /** Validates the container's params; `call` only ever sees its output. */
  paramsSchema: z.ZodType<P>;
  call(params: P, context: ServiceCallContext): Promise<unknown>;
}

export interface ServiceRegistry {
  /** The service of that name, or undefined (the caller answers with a JSON-RPC error). */
  lookup(name: string): HostService | undefined;
  names(): string[];
  /** name → built-in trust, the `builtinDefaults` argument of `effectiveTrust`. */
  builtinTrust(): Record<string, ServiceTrust>;
}

/**
 * Why a service call failed, in words the agent can act on. `refused` is a policy decision (for
 * example an address web_fetch will not reach) and must be reported as a denial, never retried
 * around.
 */
export type ServiceErrorKind = 'invalid_params' | 'refused' | 'timeout' | 'aborted' | 'failed';

export class ServiceError extends Error {
  readonly kind: ServiceErrorKind;

  constructor(kind: ServiceErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ServiceError';
    this.kind = kind;
  }
}

export function createServiceRegistry(services: Record<string, HostService>): ServiceRegistry {
  // A Map, so names such as "constructor" or "__proto__" never reach Object.prototype.
  const byName = new Map<string, HostService>();
  for (const [key, service] of Object.entries(services)) {
    if (key !== service.name) {
      throw new Error(`service registered as "${key}" calls itself "${service.name}"; use one name for both`);
    }
    byName.set(key, service);
  }
  return {
    lookup: (name) => byName.get(name),
    names: () => [...byName.keys()].sort(),
    builtinTrust: () => Object.fromEntries([...byName].map(([name, s]) => [name, { ...s.builtinTrust }])),
  };
}
