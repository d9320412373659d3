import type { Db } from './open-database.ts';

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'executed';

export interface ApprovalRecord {
  id: string;
  runId: number | null;
  groupId: string;
  operation: string;
  reason: string;
  paramsJson: string;
  paramsHash: string;
  status: ApprovalStatus;
  /** Epoch milliseconds. */
  createdAt: number;
  expiresAt: number;
  decidedAt: number | null;
  /** Who decided (`local:owner`) or, for an expiry, why (`timeout`, `host-restart`, …). */
  decidedBy: string | null;
  executedAt: number | null;
}

export interface NewApproval {
  id: string;
  runId: number | null;
  groupId: string;
  operation: string;
  reason: string;
  paramsJson: string;
  paramsHash: string;
  createdAt: number;
  expiresAt: number;
}

interface ApprovalRow {
  id: string;
  run_id: number | null;
  group_id: string;
  operation: string;
  reason: string;
  params_json: string;
  params_hash: string;
  status: ApprovalStatus;
  created_at: number;
  expires_at: number;
  decided_at: number | null;
  decided_by: string | null;
  executed_at: number | null;
}

function toRecord(r: ApprovalRow): ApprovalRecord {
  return {
    id: r.id,
    runId: r.run_id,
    groupId: r.group_id,
    operation: r.operation,
    reason: r.reason,
    paramsJson: r.params_json,
    paramsHash: r.params_hash,
    status: r.status,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    decidedAt: r.decided_at,
    decidedBy: r.decided_by,
    executedAt: r.executed_at,
  };
}

/**
 * Approval requests and their decisions. Every state change is one guarded UPDATE, so two deciders racing
 * (a replayed command, a timer firing as the owner answers) cannot both win: the loser sees `false`.
 */
export function createApprovalsStore(db: Db) {
  const insert = db.prepare(
    `INSERT INTO approvals (id, run_id, group_id, operation, reason, params_json, params_hash, status,
                            created_at, expires_at)
     VALUES (@id, @runId, @groupId, @operation, @reason, @paramsJson, @paramsHash, 'pending', @createdAt, @expiresAt)
     ON CONFLICT (id) DO NOTHING`,
  );
  const byId = db.prepare<[string], ApprovalRow>('SELECT * FROM approvals WHERE id = ?');
  // A human decision after the deadline is refused even if the expiry timer has not fired yet.
  const decide = db.prepare(
    `UPDATE approvals SET status = @status, decided_at = @at, decided_by = @by
     WHERE id = @id AND status = 'pending' AND (@status = 'expired' OR expires_at > @at)`,
  );
  const execute = db.prepare(
    `UPDATE approvals SET status = 'executed', executed_at = @at
     WHERE id = @id AND status = 'approved' AND params_hash = @paramsHash`,
  );
  const pending = db.prepare<[], ApprovalRow>(
    `SELECT * FROM approvals WHERE status = 'pending' ORDER BY created_at, id`,
  );

  return {
    /** Stores a new pending request; false when the id is already taken (the caller draws another). */
    insert(a: NewApproval): boolean {
      return insert.run(a).changes === 1;
    },
    get(id: string): ApprovalRecord | undefined {
      const r = byId.get(id);
      return r && toRecord(r);
    },
    /** Decides a pending request; false when it was not pending (or, for approve/deny, already past its deadline). */
    decide(id: string, status: 'approved' | 'denied' | 'expired', at: number, by: string): boolean {
      return decide.run({ id, status, at, by }).changes === 1;
    },
    /** Flips an approved request whose parameters hash to `paramsHash` to executed; true at most once. */
    markExecuted(id: string, paramsHash: string, at: number): boolean {
      return execute.run({ id, paramsHash, at }).changes === 1;
    },
    listPending(): ApprovalRecord[] {
      return pending.all().map(toRecord);
    },
  };
}

export type ApprovalsStore = ReturnType<typeof createApprovalsStore>;
