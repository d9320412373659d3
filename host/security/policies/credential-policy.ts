import { DomainError } from '../../errors/domain-error.ts';
import type { AuditStore } from '../../store/audit-store.ts';
import type { RunIdentity } from '../decisions.ts';
import type { TaintRegistry } from '../taint/taint.ts';
import { createDecisionRecorder } from './reviewed-decision.ts';
import { gateByMatrix, type ServiceMatrixDeps } from './service-matrix.ts';
import type { CredentialRequestRecord, CredentialUse } from '../../gateway/credential/credential-use.ts';

export interface CredentialPolicyDeps extends ServiceMatrixDeps {
  taint: TaintRegistry;
  audit: Pick<AuditStore, 'record'>;
  /** The run a credential key belongs to, as the host knows it; undefined once it is gone. */
  identityOf(owner: { runId: string; groupId: string }): RunIdentity | undefined;
}

/**
 * Credentials are services in the trust matrix: a request through one is judged by the same function as
 * a service call (service-matrix.ts), as a read (it taints the run by what the credential reads) or a
 * write (gated by the run's taint: the Cop, the owner). Its decision is an audit row of the run
 * (`credential.<name>`), and every request a second one with what went through (`credential.<name>.request`).
 */
export function createCredentialPolicy(deps: CredentialPolicyDeps) {
  return {
    async gate(owner: { runId: string; groupId: string }, use: CredentialUse): Promise<void> {
      const identity = deps.identityOf(owner);
      if (identity === undefined) throw new DomainError('forbidden', 'the run of this key is not running');
      const operation = `credential.${use.credential}`;
      const t = deps.taint.get(identity.runId);
      const record = createDecisionRecorder(deps.audit, identity, operation, t, () => use.details);
      const deny = (reason: string) => {
        record('denied', reason);
        return new DomainError('denied', reason);
      };
      await gateByMatrix(
        deps,
        identity,
        t,
        {
          operation,
          name: `credential ${use.credential}`,
          trust: use.trust,
          kind: use.write ? 'write' : 'read',
          hostMutating: false,
          details: use.details,
          reviewed: use.details,
          scanned: use.scanned,
          secretFound: use.secretFound,
          ...(use.ownerMust === undefined ? {} : { ownerMust: use.ownerMust }),
        },
        record,
        deny,
      );
    },
    record(owner: { runId: string; groupId: string }, row: CredentialRequestRecord): void {
      deps.audit.record({
        runId: Number(owner.runId),
        groupId: owner.groupId,
        operation: `credential.${row.credential}.request`,
        decision: row.refused === undefined ? 'forwarded' : 'refused',
        reason: row.refused ?? null,
        details: { method: row.method, path: row.path, status: row.status, bytes: row.bytes },
      });
    },
  };
}
