import type { Logger } from '../logging/logger.ts';
import type { AuditStore } from '../store/audit-store.ts';
import type { ApprovalRecord, ApprovalsStore } from '../store/approvals-store.ts';
import type { Clock } from '../time/clock.ts';

export type ApprovalOutcome = 'approved' | 'denied' | 'expired';

export interface ApprovalResult {
  outcome: ApprovalOutcome;
  id: string;
  /** Who approved or denied (`local:owner`); for an expiry, its cause (`timeout`, `host-stop`, …). */
  by?: string;
}

/** Values written to `audit.decision` (the operation column holds the operation that was asked for). */
export const APPROVAL_AUDIT = {
  asked: 'approval-asked',
  granted: 'approval-granted',
  denied: 'approval-denied',
  expired: 'approval-expired',
  executed: 'approval-executed',
  refused: 'approval-execution-refused',
} as const;

/** Why a request expired; stored as `decided_by` and in the audit reason. */
export type ExpiryCause = 'timeout' | 'host-restart' | 'host-stop' | 'run-ended' | 'notify-failed';

const EXPIRY_REASONS: Record<ExpiryCause, string> = {
  timeout: 'the owner did not answer in time (counts as deny)',
  'host-restart': 'the host restarted while the request waited; the run that asked for it is gone',
  'host-stop': 'the host stopped while the request waited',
  'run-ended': 'the run that asked for it ended before an answer came',
  'notify-failed': 'the admin chat could not be told about the request',
};

/** The reason of an expiry stored as `decided_by`; an unknown cause (an older row) reads as a timeout. */
export const expiryReason = (cause: string | null): string =>
  cause !== null && Object.hasOwn(EXPIRY_REASONS, cause)
    ? EXPIRY_REASONS[cause as ExpiryCause]
    : 'it timed out';

export interface ApprovalStoreDeps {
  approvals: ApprovalsStore;
  audit: Pick<AuditStore, 'record'>;
  /** The Store's transaction, so a decision and its audit row are written together. */
  transaction?: <T>(fn: () => T) => T;
}

interface Waiter {
  resolve(result: ApprovalResult): void;
  cancelTimer(): void;
  detachSignal(): void;
}

export interface ApprovalLedgerDeps {
  store: ApprovalStoreDeps;
  clock: Clock;
  notifyExpired?(text: string, meta: { approvalId: string }): void;
  onChange?(approvalId: string): void;
  logger: Logger;
}

/**
 * What the asking, deciding and executing sides of the approval service share: the stored requests with
 * their audit rows, the runs waiting in this process, and the ids this instance issued. A request ends here
 * (`settle`, `expire`), whichever side ends it.
 */
export function createApprovalLedger({ store, clock, notifyExpired, onChange, logger }: ApprovalLedgerDeps) {
  const { approvals, audit } = store;
  const transaction = store.transaction ?? (<T>(fn: () => T): T => fn());
  const waiters = new Map<string, Waiter>();
  // Ids issued by this instance and not yet finished with; consume() refuses every other id.
  const issued = new Set<string>();

  // A listener's failure is its own: it never changes a decision.
  const announce = (id: string) => {
    try {
      onChange?.(id);
    } catch (err) {
      logger.error({ err, approvalId: id }, 'an approval change listener failed');
    }
  };

  const auditDecision = (row: ApprovalRecord, decision: string, reason: string, approver?: string) =>
    audit.record({
      runId: row.runId,
      groupId: row.groupId,
      operation: row.operation,
      decision,
      reason,
      approver: approver ?? null,
      details: { approvalId: row.id, paramsHash: row.paramsHash },
    });

  const settle = (id: string, result: ApprovalResult) => {
    announce(id);
    const waiter = waiters.get(id);
    if (result.outcome !== 'approved') issued.delete(id);
    if (!waiter) return;
    waiters.delete(id);
    waiter.cancelTimer();
    waiter.detachSignal();
    waiter.resolve(result);
  };

  /** Expires a pending request (guarded: a request already decided stays as it is). */
  const expire = (id: string, cause: ExpiryCause): boolean => {
    const at = clock.now();
    const changed = transaction(() => {
      const row = approvals.get(id);
      if (!row || !approvals.decide(id, 'expired', at, cause)) return false;
      auditDecision(row, APPROVAL_AUDIT.expired, EXPIRY_REASONS[cause]);
      return true;
    });
    if (changed) {
      logger.info({ approvalId: id, cause }, 'approval request expired');
      settle(id, { outcome: 'expired', id, by: cause });
      // Requests the admin chats were shown and that lapsed on their own; a stop or restart is told as such.
      if (cause === 'timeout' || cause === 'run-ended') {
        const row = approvals.get(id);
        notifyExpired?.(
          `Request ${id}${row ? ` (${row.operation} in group ${row.groupId})` : ''} expired: ${EXPIRY_REASONS[cause]}. ` +
            'Nothing ran; answering it now changes nothing.',
          { approvalId: id },
        );
      }
    }
    return changed;
  };

  return { approvals, audit, transaction, waiters, issued, announce, auditDecision, settle, expire };
}

export type ApprovalLedger = ReturnType<typeof createApprovalLedger>;
