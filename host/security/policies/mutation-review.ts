import type { RunIdentity, Verdict } from '../decisions.ts';
import type { AuditStore } from '../../store/audit-store.ts';
import type { HumanApproval } from './bash-policy.ts';
import type { Cop } from '../cop/cop.ts';
import type { TaintRegistry } from '../taint/taint.ts';
import { copThenOwner } from './reviewed-decision.ts';

export type MutationVerdict = Verdict;

/**
 * Operations that change the host (register a group, schedule a task, change config) are reviewed by the
 * Cop whatever the taint; a flag, including the Cop's own failure, goes to the owner.
 */
export function createMutationReview(deps: {
  cop: Pick<Cop, 'review'>;
  human: HumanApproval;
  taint: TaintRegistry;
  audit: AuditStore;
}) {
  return async function reviewMutation(
    identity: RunIdentity,
    operation: string,
    params: Record<string, unknown>,
  ): Promise<MutationVerdict> {
    const reviewed = await copThenOwner(
      deps,
      identity,
      { kind: 'host_mutation', operation, params, taint: deps.taint.get(identity.runId) },
      { ownerParams: params, flagged: (reason) => `the Cop flagged it: ${reason}` },
    );
    if (reviewed.outcome === 'passed')
      return { allowed: true, reason: `the Cop passed it: ${reviewed.copReason.slice(0, 300)}` };
    return reviewed.outcome === 'approved'
      ? { allowed: true, reason: 'approved by the owner after a Cop flag' }
      : { allowed: false, reason: `not approved by the owner (${reviewed.why})` };
  };
}

export type MutationReview = ReturnType<typeof createMutationReview>;
