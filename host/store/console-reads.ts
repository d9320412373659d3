import type { ApprovalRecord } from './approvals-store.ts';
import type { AuditRow } from './audit-store.ts';
import type { Db } from './open-database.ts';

/** What the console's audit page filters on; every field optional, times as ISO strings. */
export interface AuditFilter {
  groupId?: string;
  /** The operation, or its first part (`bash` matches `bash` and `bash.cop`). */
  kind?: string;
  decision?: string;
  /** ISO 8601 instants, compared as text as they are stored. */
  since?: string;
  until?: string;
  /** Rows older than this id (the next page). */
  beforeId?: number;
  limit: number;
}

export interface RunCost {
  model: string;
  requests: number;
  promptTokens: number;
  completionTokens: number;
  costMicros: number;
}

export interface RunMessage {
  id: number;
  senderName: string;
  text: string;
  triggers: boolean;
  receivedAt: string;
}

export interface RunReply {
  id: number;
  text: string;
  status: string;
  createdAt: string;
}

const AUDIT_COLUMNS =
  'id, at, run_id AS runId, group_id AS groupId, operation, decision, taint, reason, approver, details';

/**
 * The reads the web console makes that no other part needs: a filtered page of the audit, decided
 * approvals and one run's timeline. Read-only; each walks an index and stops at its limit.
 */
export function createConsoleReads(db: Db) {
  const auditPage = db.prepare<Record<string, unknown>, AuditRow>(
    `SELECT ${AUDIT_COLUMNS} FROM audit
     WHERE (@groupId IS NULL OR group_id = @groupId)
       AND (@kind IS NULL OR operation = @kind OR operation LIKE @kindPrefix ESCAPE '\\')
       AND (@decision IS NULL OR decision = @decision)
       AND (@since IS NULL OR at >= @since) AND (@until IS NULL OR at < @until)
       AND (@beforeId IS NULL OR id < @beforeId)
     ORDER BY id DESC LIMIT @limit`,
  );
  const decided = db.prepare<[number], Record<string, unknown>>(
    `SELECT id, run_id AS runId, group_id AS groupId, operation, reason, params_json AS paramsJson,
            params_hash AS paramsHash, status, created_at AS createdAt, expires_at AS expiresAt,
            decided_at AS decidedAt, decided_by AS decidedBy, executed_at AS executedAt
     FROM approvals WHERE status != 'pending' ORDER BY rowid DESC LIMIT ?`,
  );
  const runAudit = db.prepare<[number], AuditRow>(
    `SELECT ${AUDIT_COLUMNS} FROM audit WHERE run_id = ? ORDER BY id LIMIT 2000`,
  );
  const runReplies = db.prepare<[number], RunReply>(
    `SELECT id, text, status, created_at AS createdAt FROM outbox WHERE run_id = ? ORDER BY id LIMIT 500`,
  );
  // The newest messages the run was given (its context ends at `given_through`), walking the group's index.
  const runMessages = db.prepare<
    [string, number, number],
    Omit<RunMessage, 'triggers'> & { triggers: number }
  >(
    `SELECT id, sender_name AS senderName, text, triggers, received_at AS receivedAt FROM messages
     WHERE group_id = ? AND id <= ? ORDER BY id DESC LIMIT ?`,
  );
  const runCost = db.prepare<[string], RunCost>(
    `SELECT model, SUM(requests) AS requests, SUM(prompt_tokens) AS promptTokens,
            SUM(completion_tokens) AS completionTokens, SUM(cost_micros) AS costMicros
     FROM gateway_usage WHERE run_id = ? GROUP BY model ORDER BY model`,
  );

  return {
    auditPage(f: AuditFilter): AuditRow[] {
      const kind = f.kind ?? null;
      return auditPage.all({
        groupId: f.groupId ?? null,
        kind,
        kindPrefix: kind === null ? null : `${kind.replace(/[\\%_]/g, (c) => `\\${c}`)}.%`,
        decision: f.decision ?? null,
        since: f.since ?? null,
        until: f.until ?? null,
        beforeId: f.beforeId ?? null,
        limit: f.limit,
      });
    },
    /** Approvals no longer pending, newest first. */
    decidedApprovals(limit: number): ApprovalRecord[] {
      return decided.all(limit) as unknown as ApprovalRecord[];
    },
    runTimeline(
      run: { id: number; groupId: string; givenThrough: number },
      messages = 20,
    ): { messages: RunMessage[]; audit: AuditRow[]; replies: RunReply[]; cost: RunCost[] } {
      return {
        messages: runMessages
          .all(run.groupId, run.givenThrough, messages)
          .reverse()
          .map((m) => ({ ...m, triggers: m.triggers === 1 })),
        audit: runAudit.all(run.id),
        replies: runReplies.all(run.id),
        cost: runCost.all(String(run.id)),
      };
    },
  };
}
