import type { Logger } from '../logging/logger.ts';
import { z } from 'zod';
import type { ApprovalRecord, ApprovalsStore } from '../store/approvals-store.ts';
import type { Clock } from '../time/clock.ts';
import { newApprovalId } from './approval-id.ts';
import { APPROVAL_AUDIT, type ApprovalLedger, type ApprovalResult } from './approval-ledger.ts';
import {
  formatApprovalRequest,
  ParamsNotShowableError,
  quoteUntrusted,
  type DisplayLimits,
} from './approval-message.ts';
import { canonicalJson, hashCanonicalJson } from './params-hash.ts';

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

/** Audit rows keep small parameters whole; big ones (file contents) as a prefix, the hash binds the rest. */
const AUDIT_PARAMS_CHARS = 8192;
const paramsForAudit = (paramsJson: string): unknown =>
  paramsJson.length <= AUDIT_PARAMS_CHARS
    ? (JSON.parse(paramsJson) as unknown)
    : `${paramsJson.slice(0, AUDIT_PARAMS_CHARS)}… (${paramsJson.length} characters in all)`;

const MAX_ID_DRAWS = 16;

export interface ApprovalAskingDeps {
  ledger: ApprovalLedger;
  notifyAdmin(text: string, meta: { approvalId: string }): Promise<void>;
  redact: (s: string) => string;
  clock: Clock;
  timeoutMs: number;
  displayLimits: DisplayLimits;
  /** True once the service closed: nothing new is asked of a stopping host. */
  isClosed(): boolean;
  logger: Logger;
}

/**
 * The asking side: stores a request under a fresh id with its audit row, makes the run wait on it, and
 * tells the admin chat. Whatever goes wrong in telling the owner expires the request (a deny).
 */
export function createApprovalAsking({
  ledger,
  notifyAdmin,
  redact,
  clock,
  timeoutMs,
  displayLimits,
  isClosed,
  logger,
}: ApprovalAskingDeps) {
  const { approvals, audit, transaction, waiters, issued, announce, expire } = ledger;

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

  /** Tells the owner; a failure, a request too big to show included, expires the request. */
  const tellOwner = (row: ApprovalRecord) => {
    const { id, groupId, operation } = row;
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
              reason: row.reason,
              paramsJson: row.paramsJson,
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
  };

  /**
   * Asks the owner. Resolves with the decision, or `expired` (a deny) after `timeoutMs`, when `signal`
   * aborts, when the admin chat cannot be notified, or when the service closes. Rejects only for a malformed
   * request (parameters that are not plain JSON included), which the caller must treat as a deny.
   */
  return async function request(input: ApprovalRequest): Promise<ApprovalResult> {
    if (isClosed()) throw new Error('the approval service is closed; the host is stopping');
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
    tellOwner(row);
    return result;
  };
}
