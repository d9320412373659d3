import type { ProtocolProblem } from '../../container-agent/src/rpc/peer.ts';
import type { AuditStore } from '../store/audit-store.ts';
import type { RunIdentity } from '../security/decisions.ts';

/** A rejected frame (malformed, oversized, forged fields, unknown method) is a security event: audit it. */
export function auditProtocolProblem(
  audit: AuditStore,
  identity: RunIdentity,
  problem: ProtocolProblem,
): void {
  audit.record({
    runId: identity.runId,
    groupId: identity.group.id,
    operation: 'ipc.frame',
    decision: 'rejected',
    reason: `${problem.kind}: ${problem.message}`.slice(0, 500),
    details: { method: problem.method ?? null },
  });
}
