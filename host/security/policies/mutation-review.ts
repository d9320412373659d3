import type { RunIdentity, Verdict } from '../decisions.ts';
import type { AuditStore } from '../../store/audit-store.ts';
import type { HumanApproval } from './bash-policy.ts';
import type { Cop } from '../cop/cop.ts';
import { describeTaint, type TaintRegistry } from '../taint/taint.ts';

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
    const t = deps.taint.get(identity.runId);
    const review = await deps.cop.review({ kind: 'host_mutation', operation, params, taint: t });
    deps.audit.record({
      runId: identity.runId,
      groupId: identity.group.id,
      operation: `${operation}.cop`,
      decision: review.flagged ? 'flagged' : 'passed',
      taint: describeTaint(t),
      reason: review.reason.slice(0, 1000),
    });
    if (!review.flagged)
      return { allowed: true, reason: `the Cop passed it: ${review.reason.slice(0, 300)}` };
    const approved = await deps.human.ask(
      identity,
      operation,
      `the Cop flagged it: ${review.reason.slice(0, 300)}`,
      params,
    );
    return approved
      ? { allowed: true, reason: 'approved by the owner after a Cop flag' }
      : {
          allowed: false,
          reason: `not approved by the owner (the Cop flagged it: ${review.reason.slice(0, 300)})`,
        };
  };
}

export type MutationReview = ReturnType<typeof createMutationReview>;
