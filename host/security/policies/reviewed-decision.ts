import type { RunIdentity } from '../decisions.ts';
import type { AuditStore } from '../../store/audit-store.ts';
import type { Cop, CopReviewRequest } from '../cop/cop.ts';
import { describeTaint, type Taint } from '../taint/taint.ts';

export interface HumanApproval {
  /** Asks the owner in the admin chat; resolves true only on an explicit approve. */
  ask(
    identity: RunIdentity,
    operation: string,
    reason: string,
    params: Record<string, unknown>,
  ): Promise<boolean>;
}

/** Writes one audit row of one decision; every policy decision, allowed ones included, goes through one. */
export type DecisionRecorder = (decision: string, reason: string, approver?: string) => void;

/**
 * The recorder of one operation of one run: each row carries the operation, the run's taint at the time of
 * the decision, the reason and who approved (null unless the owner did).
 */
export function createDecisionRecorder(
  audit: Pick<AuditStore, 'record'>,
  identity: RunIdentity,
  operation: string,
  taint: Taint,
  details?: () => unknown,
): DecisionRecorder {
  return (decision, reason, approver) => {
    const shown = details?.();
    audit.record({
      runId: identity.runId,
      groupId: identity.group.id,
      operation,
      decision,
      taint: describeTaint(taint),
      reason,
      approver: approver ?? null,
      ...(shown === undefined ? {} : { details: shown }),
    });
  };
}

export interface CopThenOwnerDeps {
  cop: Pick<Cop, 'review'>;
  human: HumanApproval;
  audit: Pick<AuditStore, 'record'>;
}

export type ReviewedOutcome =
  | { outcome: 'passed'; copReason: string }
  | { outcome: 'approved' | 'denied'; copReason: string; why: string };

/**
 * The Cop, then the owner on a flag (DESIGN's matrix): the Cop's verdict is its own audit row
 * (`<operation>.cop`, flagged or passed); a flag, the Cop's own failure included, asks the owner with
 * `flagged(reason)` as the question's reason and `ownerParams` as what the approval is bound to.
 */
export async function copThenOwner(
  deps: CopThenOwnerDeps,
  identity: RunIdentity,
  request: CopReviewRequest,
  ask: { ownerParams: Record<string, unknown>; flagged(copReason: string): string },
): Promise<ReviewedOutcome> {
  const review = await deps.cop.review(request);
  createDecisionRecorder(
    deps.audit,
    identity,
    `${request.operation}.cop`,
    request.taint,
  )(review.flagged ? 'flagged' : 'passed', review.reason.slice(0, 1000));
  if (!review.flagged) return { outcome: 'passed', copReason: review.reason };
  const why = ask.flagged(review.reason.slice(0, 300));
  const approved = await deps.human.ask(identity, request.operation, why, ask.ownerParams);
  return { outcome: approved ? 'approved' : 'denied', copReason: review.reason, why };
}
