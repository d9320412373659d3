import type { Db } from './open-database.ts';

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'interrupted';

export interface RunRecord {
  id: number;
  groupId: string;
  attempt: number;
  status: RunStatus;
  givenThrough: number;
  ackedThrough: number;
  replied: boolean;
  /** How far the agent had acknowledged when the run last sent a message. */
  repliedThrough: number;
  /** The last message the run sent was its answer, not a progress note. */
  lastReplyFinal: boolean;
  exitReason: string | null;
  startedAt: string;
  endedAt: string | null;
}

interface RunRow {
  id: number;
  group_id: string;
  attempt: number;
  status: RunStatus;
  given_through: number;
  acked_through: number;
  replied: number;
  replied_through: number;
  last_reply_final: number;
  exit_reason: string | null;
  started_at: string;
  ended_at: string | null;
}

function toRecord(r: RunRow): RunRecord {
  return {
    id: r.id,
    groupId: r.group_id,
    attempt: r.attempt,
    status: r.status,
    givenThrough: r.given_through,
    ackedThrough: r.acked_through,
    replied: r.replied === 1,
    repliedThrough: r.replied_through,
    lastReplyFinal: r.last_reply_final === 1,
    exitReason: r.exit_reason,
    startedAt: r.started_at,
    endedAt: r.ended_at,
  };
}

export function createRunsStore(db: Db, now: () => Date = () => new Date()) {
  const insert = db.prepare(
    `INSERT INTO runs (group_id, attempt, status, given_through, started_at) VALUES (?, ?, 'running', ?, ?)`,
  );
  const byId = db.prepare<[number], RunRow>('SELECT * FROM runs WHERE id = ?');
  const given = db.prepare('UPDATE runs SET given_through = MAX(given_through, ?) WHERE id = ?');
  const acked = db.prepare('UPDATE runs SET acked_through = MAX(acked_through, ?) WHERE id = ?');
  const replied = db.prepare(
    'UPDATE runs SET replied = 1, replied_through = MAX(replied_through, ?), last_reply_final = ? WHERE id = ?',
  );
  const finish = db.prepare(
    `UPDATE runs SET status = ?, exit_reason = ?, ended_at = ? WHERE id = ? AND status = 'running'`,
  );
  const running = db.prepare<[], RunRow>(`SELECT * FROM runs WHERE status = 'running' ORDER BY id`);
  const recent = db.prepare<[number], RunRow>('SELECT * FROM runs ORDER BY id DESC LIMIT ?');

  return {
    start(groupId: string, attempt: number, givenThrough: number): RunRecord {
      const id = Number(insert.run(groupId, attempt, givenThrough, now().toISOString()).lastInsertRowid);
      return toRecord(byId.get(id) as RunRow);
    },
    get(id: number): RunRecord | undefined {
      const r = byId.get(id);
      return r && toRecord(r);
    },
    markGiven(id: number, through: number): void {
      given.run(through, id);
    },
    markAcked(id: number, through: number): void {
      acked.run(through, id);
    },
    /** `final`: this message is the run's answer; a later progress note clears it again. */
    markReplied(id: number, ackedThrough: number, final = false): void {
      replied.run(ackedThrough, final ? 1 : 0, id);
    },
    finish(id: number, status: Exclude<RunStatus, 'running'>, exitReason: string): void {
      finish.run(status, exitReason, now().toISOString(), id);
    },
    running(): RunRecord[] {
      return running.all().map(toRecord);
    },
    recent(limit: number): RunRecord[] {
      return recent.all(limit).map(toRecord);
    },
  };
}
