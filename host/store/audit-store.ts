import type { Db } from './open-database.ts';

export interface AuditEntry {
  runId?: number | null;
  groupId?: string | null;
  operation: string;
  decision: string;
  taint?: string | null;
  reason?: string | null;
  approver?: string | null;
  details?: unknown;
}

export interface AuditRow {
  id: number;
  at: string;
  runId: number | null;
  groupId: string | null;
  operation: string;
  decision: string;
  taint: string | null;
  reason: string | null;
  approver: string | null;
  details: string | null;
}

/**
 * Append-only audit log. `redact` removes held secrets from every text field before it is written,
 * so an audit row can be shown to the owner without leaking what a container tried to exfiltrate.
 */
export function createAuditStore(
  db: Db,
  redact: (s: string) => string = (s) => s,
  now: () => Date = () => new Date(),
) {
  const insert = db.prepare(
    `INSERT INTO audit (at, run_id, group_id, operation, decision, taint, reason, approver, details)
     VALUES (@at, @runId, @groupId, @operation, @decision, @taint, @reason, @approver, @details)`,
  );
  const tail = db.prepare<[number], Record<string, unknown>>(
    `SELECT id, at, run_id AS runId, group_id AS groupId, operation, decision, taint, reason, approver, details
     FROM audit ORDER BY id DESC LIMIT ?`,
  );
  const opt = (s: string | null | undefined) => (s == null ? null : redact(s));

  return {
    record(e: AuditEntry): number {
      return Number(
        insert.run({
          at: now().toISOString(),
          runId: e.runId ?? null,
          groupId: e.groupId ?? null,
          operation: e.operation,
          decision: e.decision,
          taint: opt(e.taint),
          reason: opt(e.reason),
          approver: opt(e.approver),
          details: e.details === undefined ? null : redact(JSON.stringify(e.details)),
        }).lastInsertRowid,
      );
    },
    tail(n: number): AuditRow[] {
      return (tail.all(n) as unknown as AuditRow[]).reverse();
    },
  };
}

export type AuditStore = ReturnType<typeof createAuditStore>;
