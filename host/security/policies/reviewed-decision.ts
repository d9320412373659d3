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
  /** Where the verdict's row goes by default; a caller that gives `verdictRow` need not give it. */
  audit?: Pick<AuditStore, 'record'>;
}

export type ReviewedOutcome =
  | { outcome: 'passed'; copReason: string }
  | { outcome: 'approved' | 'denied'; copReason: string; why: string; flagged: boolean };

/** What the owner is asked, and where the Cop's verdict is written. */
export interface ReviewedAsk {
  /** What the owner's approval is bound to. */
  ownerParams: Record<string, unknown>;
  /** The question's reason on a flag, given the Cop's reason cut to 300 characters. */
  flagged(copReason: string): string;
  /**
   * Given, the owner is asked on a pass too, with this reason: a config change outlives the conversation,
   * so a Cop pass is shown to the owner, never a substitute for them.
   */
  passed?(copReason: string): string;
  /**
   * The verdict's own row: how it is recorded and how its reason reads, given the Cop's whole reason.
   * Default: `<operation>.cop` with the run's taint, the reason cut to 1000 characters.
   */
  verdictRow?: { record: DecisionRecorder; reason?(copReason: string): string };
}

const cut1000 = (text: string) => text.slice(0, 1000);

/**
 * The Cop, then the owner on a flag (DESIGN's matrix): the Cop's verdict is its own audit row (flagged or
 * passed); a flag, the Cop's own failure included, asks the owner with `flagged(reason)` as the question's
 * reason and `ownerParams` as what the approval is bound to (and so does a pass, where `passed` is given).
 */
export async function copThenOwner(
  deps: CopThenOwnerDeps,
  identity: RunIdentity,
  request: CopReviewRequest,
  ask: ReviewedAsk,
): Promise<ReviewedOutcome> {
  const record =
    ask.verdictRow?.record ??
    (deps.audit && createDecisionRecorder(deps.audit, identity, `${request.operation}.cop`, request.taint));
  // A verdict that could not be written is no verdict: nothing is reviewed without its row.
  if (!record)
    throw new Error(`copThenOwner for ${request.operation} has neither an audit store nor a verdict row`);
  // The run pays for its review: its group's cap, its review budget (a refused review is a flag).
  const review = await deps.cop.review(request, {
    runId: String(identity.runId),
    groupId: identity.group.id,
  });
  record(review.flagged ? 'flagged' : 'passed', (ask.verdictRow?.reason ?? cut1000)(review.reason));
  const shown = review.reason.slice(0, 300);
  const why = review.flagged ? ask.flagged(shown) : ask.passed?.(shown);
  if (why === undefined) return { outcome: 'passed', copReason: review.reason };
  const approved = await deps.human.ask(identity, request.operation, why, ask.ownerParams);
  return {
    outcome: approved ? 'approved' : 'denied',
    copReason: review.reason,
    why,
    flagged: review.flagged,
  };
}
