import type { Dispatcher } from 'undici';
import type { KeyOwner } from '../key-registry.ts';
import type { LogLevels } from '../../logging/logger.ts';
import type { Clock } from '../../time/clock.ts';
import type { ServiceTrust } from '../../services/service-trust.ts';
import type { CredentialsConfig } from './credential-config.ts';

/* What the credential route is given, and the shapes it hands the trust matrix and the audit. */

/** One request through a credential, as the trust matrix judges it (security/policies/credential-policy.ts). */
export interface CredentialUse {
  credential: string;
  kind: 'http' | 'git';
  trust: ServiceTrust;
  /** A write (POST, PUT, PATCH, DELETE; a git push) is gated by the matrix; a read taints. */
  write: boolean;
  /** What is scanned for secrets: the method, path, query and body; a push's commits and text files. */
  scanned: string;
  secretFound: string;
  /** What the owner's question shows. */
  details: Record<string, unknown>;
  /** Why the owner must approve whatever the taint (a push to a protected ref). */
  ownerMust?: string;
}

/** The audit row every request through a credential leaves, refused ones included. */
export interface CredentialRequestRecord {
  credential: string;
  method: string;
  path: string;
  status: number;
  /** Bytes of the answer the container got. */
  bytes: number;
  /** Why the host refused it, when it did. */
  refused?: string;
}

export interface CredentialRouteDeps {
  /** Timers of the route's own asks (a remote's refs); the host's one clock. */
  clock: Clock;
  /** Read at each request: a reloaded allowlist or grant applies to the next one. */
  credentials(): CredentialsConfig;
  /** The credentials a group may use. */
  grantedTo(groupId: string): readonly string[];
  /** The value behind `value_env`, from the host's environment or `.env`. */
  secret(envName: string): string | undefined;
  /** The matrix: resolves when the request may go on; throws a DomainError saying why not. */
  gate(owner: KeyOwner, use: CredentialUse): Promise<void>;
  record(owner: KeyOwner, row: CredentialRequestRecord): void;
  /** Aborts what a run still has in flight when it ends. */
  signalFor(owner: KeyOwner): AbortSignal;
  dispatcher: Dispatcher;
  logger: LogLevels;
}
