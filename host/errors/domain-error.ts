/**
 * Why a host operation refused or failed, in the domain's own words. Domain modules (scheduler, services,
 * security) throw this and know nothing of JSON-RPC: host/ipc alone turns a kind into a protocol error code
 * (`host/ipc/domain-error-codes.ts`), so the wire format can change without touching them.
 */
export type DomainErrorKind =
  /** The request itself is wrong (unknown group, task or service, bad params): fixing it may succeed. */
  | 'invalid'
  /** The run's identity does not allow it (a non-admin group, another group's task). */
  | 'forbidden'
  /** A security decision said no (policy, the Cop, the owner). Never to be read as "allow". */
  | 'denied'
  /** The operation failed on the host's side (a service crashed or timed out). */
  | 'internal';

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    /** Extra facts for the agent (e.g. a service's own failure kind); never secrets. */
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}
