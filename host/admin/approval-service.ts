import type { Logger } from '../logging/logger.ts';
import { z } from 'zod';
import type { AuditStore } from '../store/audit-store.ts';
import type { ApprovalRecord, ApprovalsStore } from '../store/approvals-store.ts';
import { newApprovalId, normalizeApprovalId } from './approval-id.ts';
import {
  DEFAULT_DISPLAY_LIMITS,
  formatApprovalRequest,
  ParamsNotShowableError,
  quoteUntrusted,
  formatInstant,
  type DisplayLimits,
  type PendingItem,
} from './approval-message.ts';
import { canonicalJson, hashCanonicalJson, hashParams } from './params-hash.ts';
import { systemClock, type Clock } from '../time/clock.ts';

export type ApprovalOutcome = 'approved' | 'denied' | 'expired';

export interface ApprovalResult {
  outcome: ApprovalOutcome;
  id: string;
  /** Who approved or denied (`local:owner`); for an expiry, its cause (`timeout`, `host-stop`, …). */
  by?: string;
}

export interface DecideResult {
  ok: boolean;
  message: string;
  /** What happened in a word or two, for a platform's short notice (Telegram's button toast). */
  brief: 'Approved' | 'Denied' | 'Already decided' | 'Expired' | 'Unknown request';
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

const expiryReason = (cause: string | null): string =>
  cause !== null && Object.hasOwn(EXPIRY_REASONS, cause)
    ? EXPIRY_REASONS[cause as ExpiryCause]
    : 'it timed out';

/** Audit rows keep small parameters whole; big ones (file contents) as a prefix, the hash binds the rest. */
const AUDIT_PARAMS_CHARS = 8192;
const paramsForAudit = (paramsJson: string): unknown =>
  paramsJson.length <= AUDIT_PARAMS_CHARS
    ? (JSON.parse(paramsJson) as unknown)
    : `${paramsJson.slice(0, AUDIT_PARAMS_CHARS)}… (${paramsJson.length} characters in all)`;

export interface ApprovalStoreDeps {
  approvals: ApprovalsStore;
  audit: Pick<AuditStore, 'record'>;
  /** The Store's transaction, so a decision and its audit row are written together. */
  transaction?: <T>(fn: () => T) => T;
}

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

const requestSchema = z
  .object({
    runId: z.number().int().nonnegative().nullable().optional(),
    groupId: z.string().min(1, 'groupId must name the group that asks'),
    operation: z.string().min(1, 'operation must say what would run').max(200),
    reason: z.string().max(10_000, 'reason must be at most 10000 characters'),
    params: z.unknown(),
    signal: z.instanceof(AbortSignal).optional(),
  })
  .strict();

export type ApprovalRequest = z.input<typeof requestSchema>;

const timeoutSchema = z
  .number()
  .int()
  .positive()
  .max(2 ** 31 - 1, 'timeoutMs must fit a Node timer (at most 2147483647 ms)');

const bySchema = z.string().trim().min(1, 'the decider must be named');

interface Waiter {
  resolve(result: ApprovalResult): void;
  cancelTimer(): void;
  detachSignal(): void;
}

const MAX_ID_DRAWS = 16;

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
  const { approvals, audit } = store;
  const transaction = store.transaction ?? (<T>(fn: () => T): T => fn());
  const waiters = new Map<string, Waiter>();
  // Ids issued by this instance and not yet finished with; consume() refuses every other id.
  const issued = new Set<string>();
  let closed = false;

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

  const describeFinished = (row: ApprovalRecord): string => {
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
  };

  const insertFresh = (fields: Omit<Parameters<ApprovalsStore['insert']>[0], 'id'>): ApprovalRecord => {
    for (let i = 0; i < MAX_ID_DRAWS; i++) {
      const id = newApprovalId();
      const row = transaction(() => {
        if (!approvals.insert({ id, ...fields })) return undefined;
        const stored = approvals.get(id) as ApprovalRecord;
        audit.record({
          runId: fields.runId,
          groupId: fields.groupId,
          operation: fields.operation,
          decision: APPROVAL_AUDIT.asked,
          reason: fields.reason,
          details: {
            approvalId: id,
            paramsHash: fields.paramsHash,
            params: paramsForAudit(fields.paramsJson),
          },
        });
        return stored;
      });
      if (row) return row;
    }
    throw new Error(
      `could not draw a free approval id in ${MAX_ID_DRAWS} tries; the approvals table is unusual`,
    );
  };

  return {
    /**
     * Asks the owner. Resolves with the decision, or `expired` (a deny) after `timeoutMs`, when `signal`
     * aborts, when the admin chat cannot be notified, or when the service closes. Rejects only for a malformed
     * request (parameters that are not plain JSON included), which the caller must treat as a deny.
     */
    async request(input: ApprovalRequest): Promise<ApprovalResult> {
      if (closed) throw new Error('the approval service is closed; the host is stopping');
      const { runId, groupId, operation, reason, params, signal } = requestSchema.parse(input);
      const paramsJson = canonicalJson(params);
      const createdAt = clock.now();
      const row = insertFresh({
        runId: runId ?? null,
        groupId,
        operation,
        reason,
        paramsJson,
        paramsHash: hashCanonicalJson(paramsJson),
        createdAt,
        expiresAt: createdAt + timeoutMs,
      });
      const { id } = row;
      issued.add(id);
      logger.info({ approvalId: id, groupId, runId, operation }, 'approval requested');
      announce(id);

      const result = new Promise<ApprovalResult>((resolve) => {
        const onAbort = () => expire(id, 'run-ended');
        signal?.addEventListener('abort', onAbort, { once: true });
        waiters.set(id, {
          resolve,
          cancelTimer: clock.setTimer(() => expire(id, 'timeout'), timeoutMs),
          detachSignal: () => signal?.removeEventListener('abort', onAbort),
        });
      });
      if (signal?.aborted) expire(id, 'run-ended');

      // Formatting runs inside the chain too: whatever goes wrong in telling the owner expires the request.
      void Promise.resolve()
        .then(() =>
          notifyAdmin(
            formatApprovalRequest(
              {
                id,
                runId: row.runId,
                groupId,
                operation,
                reason,
                paramsJson,
                expiresAt: row.expiresAt,
                timeoutMs,
              },
              redact,
              displayLimits,
            ),
            { approvalId: id },
          ),
        )
        .catch((err: unknown) => {
          if (err instanceof ParamsNotShowableError) {
            // Tell the owner what was refused and why, in a message that fits.
            void notifyAdmin(
              redact(
                `Refused without asking (${id}): ${quoteUntrusted(operation, 100)} for group ` +
                  `${quoteUntrusted(groupId, 100)}; ${err.message}, and nobody may approve what they cannot see.`,
              ),
              { approvalId: `${id}-refused` },
            ).catch(() => undefined);
          } else
            logger.error({ err, approvalId: id }, 'could not notify the admin chat of an approval request');
          expire(id, 'notify-failed');
        });
      return result;
    },

    /**
     * The owner's answer. Unknown, expired and already decided ids change nothing and say why. `where` names
     * the place the owner answered in for the audit (the admin chat, the web console).
     */
    decide(
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
    },

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
