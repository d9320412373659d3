import type { Logger } from '../logging/logger.ts';
import { z } from 'zod';
import { normalizeApprovalId } from './approval-id.ts';
import { createApprovalAsking } from './approval-asking.ts';
import { createApprovalDecision } from './approval-decision.ts';
import { APPROVAL_AUDIT, createApprovalLedger, type ApprovalStoreDeps } from './approval-ledger.ts';
import {
  DEFAULT_DISPLAY_LIMITS,
  formatApprovalRequest,
  ParamsNotShowableError,
  type DisplayLimits,
  type PendingItem,
} from './approval-message.ts';
import { hashParams } from './params-hash.ts';
import { systemClock, type Clock } from '../time/clock.ts';

export type { ApprovalResult } from './approval-ledger.ts';

export interface ApprovalServiceDeps {
  store: ApprovalStoreDeps;
  /**
   * Sends a message to the admin chat (the owner); `approvalId` makes a stable outbox idempotency key.
   * A rejection expires the request: nobody can answer it.
   */
  notifyAdmin(text: string, meta: { approvalId: string }): Promise<void>;
  /**
   * Tells every admin chat that a request it was shown expired unanswered, so the owner is not left with a
   * request that looks open; keyed by the approval id, so told once.
   */
  notifyExpired?(text: string, meta: { approvalId: string }): void;
  /** Removes held secrets from everything the admin chat is shown. */
  redact: (s: string) => string;
  clock?: Clock;
  timeoutMs?: number;
  displayLimits?: DisplayLimits;
  /** A request was made, decided, expired or executed (the web console's live view follows this). */
  onChange?(approvalId: string): void;
  logger: Logger;
}

const timeoutSchema = z
  .number()
  .int()
  .positive()
  .max(2 ** 31 - 1, 'timeoutMs must fit a Node timer (at most 2147483647 ms)');

/**
 * Human approval of risky operations. A request is stored (bound to the sha256 of its canonical
 * parameters), shown in the admin chat, and answered there by the owner; no answer within `timeoutMs` is a
 * deny. Only the run that asked waits on it, and only the executor that holds the id can run it, once, with
 * the very parameters that were shown.
 *
 * Restart policy: the promise a run waits on lives in this process. When the host restarts, the runs died
 * with it, so nothing is left to act on a decision; `expireOrphans()` (call it once at start) marks every
 * request still pending as expired with cause `host-restart`. Requests approved but not yet executed before
 * the restart stay `approved` in the history but can never execute: `consume` only honours ids that this
 * service instance issued.
 */
export function createApprovalService({
  store,
  notifyAdmin,
  notifyExpired,
  redact,
  clock = systemClock,
  timeoutMs: rawTimeout = 300_000,
  displayLimits = DEFAULT_DISPLAY_LIMITS,
  onChange,
  logger,
}: ApprovalServiceDeps) {
  const timeoutMs = timeoutSchema.parse(rawTimeout);
  const ledger = createApprovalLedger({ store, clock, notifyExpired, onChange, logger });
  const { approvals, transaction, waiters, issued, announce, auditDecision, expire } = ledger;
  let closed = false;
  const request = createApprovalAsking({
    ledger,
    notifyAdmin,
    redact,
    clock,
    timeoutMs,
    displayLimits,
    isClosed: () => closed,
    logger,
  });
  const decide = createApprovalDecision({ ledger, clock, logger });

  return {
    request,
    decide,

    /**
     * For the executor, right before it runs the operation: true only once, only for an approved request this
     * service issued, and only if `params` are the ones that were approved (same canonical JSON hash).
     */
    consume(rawId: string, params: unknown): boolean {
      const id = normalizeApprovalId(rawId);
      const row = id === undefined ? undefined : approvals.get(id);
      let hash: string | undefined;
      try {
        hash = hashParams(params);
      } catch {
        hash = undefined;
      }
      const at = clock.now();
      const refuse = (why: string) => {
        if (row) auditDecision(row, APPROVAL_AUDIT.refused, why);
        logger.warn({ approvalId: rawId, why }, 'approved operation refused');
        return false;
      };
      if (id === undefined || !row) return refuse('unknown approval id');
      if (row.status !== 'approved') return refuse(`the request is ${row.status}, not approved`);
      if (!issued.has(id)) return refuse('approved before the host restarted; it can no longer run');
      if (hash === undefined || hash !== row.paramsHash)
        return refuse('the parameters differ from the ones the owner approved');
      const ok = transaction(() => {
        if (!approvals.markExecuted(id, hash, at)) return false;
        auditDecision(row, APPROVAL_AUDIT.executed, 'approved operation ran once');
        return true;
      });
      if (!ok) return refuse('already executed');
      issued.delete(id);
      announce(id);
      return true;
    },

    /**
     * The text the admin chat was shown for a request (the same formatting, limits and redaction), for the
     * web console; undefined for an unknown id or parameters that could never be shown.
     */
    describe(rawId: string): string | undefined {
      const id = normalizeApprovalId(rawId);
      const row = id === undefined ? undefined : approvals.get(id);
      if (!row) return undefined;
      try {
        return formatApprovalRequest(
          { ...row, timeoutMs: row.expiresAt - row.createdAt },
          redact,
          displayLimits,
        );
      } catch (err) {
        if (err instanceof ParamsNotShowableError) return undefined;
        throw err;
      }
    },

    /** Open requests, oldest first. A request past its deadline is expired here rather than listed. */
    pending(): PendingItem[] {
      const now = clock.now();
      const open: PendingItem[] = [];
      for (const row of approvals.listPending()) {
        if (now >= row.expiresAt) {
          expire(row.id, 'timeout');
          continue;
        }
        open.push({
          id: row.id,
          runId: row.runId,
          groupId: row.groupId,
          operation: row.operation,
          reason: row.reason,
          expiresInMs: row.expiresAt - now,
        });
      }
      return open;
    },

    /**
     * Call once at host start, before any run: every request still pending belongs to a run that died with
     * the previous host process, so it is expired (never executed). Returns the ids it expired.
     */
    expireOrphans(): string[] {
      return approvals
        .listPending()
        .filter((row) => !waiters.has(row.id) && expire(row.id, 'host-restart'))
        .map((row) => row.id);
    },

    /** Stops every timer and expires every request still waiting, so no run hangs on a stopping host. */
    close(): void {
      if (closed) return;
      closed = true;
      for (const id of [...waiters.keys()]) {
        if (!expire(id, 'host-stop')) {
          const waiter = waiters.get(id);
          waiters.delete(id);
          waiter?.cancelTimer();
          waiter?.detachSignal();
          waiter?.resolve({ outcome: 'expired', id, by: 'host-stop' });
        }
      }
      issued.clear();
    },
  };
}

export type ApprovalService = ReturnType<typeof createApprovalService>;
