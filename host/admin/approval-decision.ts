import type { Logger } from '../logging/logger.ts';
import { z } from 'zod';
import type { ApprovalRecord } from '../store/approvals-store.ts';
import type { Clock } from '../time/clock.ts';
import { normalizeApprovalId } from './approval-id.ts';
import { APPROVAL_AUDIT, expiryReason, type ApprovalLedger } from './approval-ledger.ts';
import { formatInstant } from './approval-message.ts';

export interface DecideResult {
  ok: boolean;
  message: string;
  /** What happened in a word or two, for a platform's short notice (Telegram's button toast). */
  brief: 'Approved' | 'Denied' | 'Already decided' | 'Expired' | 'Unknown request';
}

const bySchema = z.string().trim().min(1, 'the decider must be named');

/** Why an answer to a request that is no longer pending changed nothing. */
function describeFinished(row: ApprovalRecord): string {
  const when = row.decidedAt === null ? '' : ` at ${formatInstant(row.decidedAt)}`;
  switch (row.status) {
    case 'approved':
      return `Request ${row.id} was already approved by ${row.decidedBy ?? 'someone'}${when}; nothing changed.`;
    case 'executed':
      return `Request ${row.id} was approved by ${row.decidedBy ?? 'someone'}${when} and has already run; nothing changed.`;
    case 'denied':
      return `Request ${row.id} was already denied by ${row.decidedBy ?? 'someone'}${when}; nothing changed.`;
    case 'expired':
      return (
        `Request ${row.id} expired${when} (${expiryReason(row.decidedBy)}); ` +
        'it counts as denied and nothing changed. If it is still needed, ask the agent to try again.'
      );
    default:
      return `Request ${row.id} is ${row.status}; nothing changed.`;
  }
}

/** The deciding side: the owner's answer to a request, written with its audit row and handed to the run. */
export function createApprovalDecision({
  ledger,
  clock,
  logger,
}: {
  ledger: ApprovalLedger;
  clock: Clock;
  logger: Logger;
}) {
  const { approvals, transaction, waiters, auditDecision, settle, expire } = ledger;

  /**
   * The owner's answer. Unknown, expired and already decided ids change nothing and say why. `where` names
   * the place the owner answered in for the audit (the admin chat, the web console).
   */
  return function decide(
    rawId: string,
    decision: 'approve' | 'deny',
    rawBy: string,
    where = 'the admin chat',
  ): DecideResult {
    const by = bySchema.parse(rawBy);
    const id = normalizeApprovalId(rawId);
    const row = id === undefined ? undefined : approvals.get(id);
    if (id === undefined || !row) {
      return {
        ok: false,
        message: `No approval request has the id "${rawId.trim().slice(0, 20)}". Send "pending" to list the open ones.`,
        brief: 'Unknown request',
      };
    }
    if (row.status === 'pending') {
      // The timer may lag behind the deadline, and a request from before a restart has nobody waiting.
      if (clock.now() >= row.expiresAt) expire(id, 'timeout');
      else if (!waiters.has(id)) expire(id, 'host-restart');
    }
    const status = decision === 'approve' ? 'approved' : 'denied';
    const at = clock.now();
    const changed = transaction(() => {
      if (!approvals.decide(id, status, at, by)) return false;
      auditDecision(
        row,
        decision === 'approve' ? APPROVAL_AUDIT.granted : APPROVAL_AUDIT.denied,
        `${decision === 'approve' ? 'approved' : 'denied'} by the owner in ${where}`,
        by,
      );
      return true;
    });
    if (!changed) {
      const finished = approvals.get(id) ?? row;
      return {
        ok: false,
        message: describeFinished(finished),
        brief: finished.status === 'expired' ? 'Expired' : 'Already decided',
      };
    }
    logger.info({ approvalId: id, decision, by }, 'approval request decided');
    settle(id, { outcome: status, id, by });
    return decision === 'approve'
      ? {
          ok: true,
          message: `Approved ${id}: ${row.operation} may run once, with the parameters shown.`,
          brief: 'Approved',
        }
      : { ok: true, message: `Denied ${id}: ${row.operation} will not run.`, brief: 'Denied' };
  };
}
