import crypto from 'node:crypto';
import { taskScheduleSchema, type TaskSchedule } from '../../container-agent/src/protocol.ts';
import type { Db } from './open-database.ts';

export type TaskStatus = 'active' | 'paused' | 'completed' | 'cancelled';

export interface TaskRecord {
  id: string;
  groupId: string;
  prompt: string;
  schedule: TaskSchedule;
  status: TaskStatus;
  /** Epoch milliseconds; set exactly when the task is active. */
  nextRunAt: number | null;
  lastRunAt: number | null;
  createdByRun: number | null;
  createdAt: number;
  /** What the run that created or last changed the task had read; its firings pass it on to the group. */
  taint: TaskTaint;
}

export interface TaskTaint {
  corruption: boolean;
  secret: boolean;
}

export interface NewTask {
  groupId: string;
  prompt: string;
  schedule: TaskSchedule;
  /** The first time it is due (epoch ms); the task starts active. */
  nextRunAt: number;
  createdByRun: number | null;
  /** The creating run's taint; omitted only where no run was involved (tests, owner tooling). */
  taint?: TaskTaint;
}

/** What firing a task leaves behind: the next due time, or none once it is completed (or paused on error). */
export interface TaskAdvance {
  status: 'active' | 'completed' | 'paused';
  nextRunAt: number | null;
  lastRunAt: number;
}

interface TaskRow {
  id: string;
  group_id: string;
  prompt: string;
  schedule_json: string;
  status: TaskStatus;
  next_run_at: number | null;
  last_run_at: number | null;
  created_by_run: number | null;
  created_at: number;
  taint_corruption: number;
  taint_secret: number;
}

/** Letters and digits that cannot be misread for one another (no 0/o, 1/l/i), as an agent or a human types them. */
const TASK_ID_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
const TASK_ID_LENGTH = 8;

export function newTaskId(randomInt: (max: number) => number = crypto.randomInt): string {
  let id = '';
  for (let i = 0; i < TASK_ID_LENGTH; i++) id += TASK_ID_ALPHABET[randomInt(TASK_ID_ALPHABET.length)];
  return id;
}

function toRecord(r: TaskRow): TaskRecord {
  const schedule = taskScheduleSchema.safeParse(JSON.parse(r.schedule_json));
  // Only the host writes this column, through the same schema; a row that fails it was edited by hand.
  if (!schedule.success)
    throw new Error(`task ${r.id} has a stored schedule that is not valid: ${r.schedule_json}`);
  return {
    id: r.id,
    groupId: r.group_id,
    prompt: r.prompt,
    schedule: schedule.data,
    status: r.status,
    nextRunAt: r.next_run_at,
    lastRunAt: r.last_run_at,
    createdByRun: r.created_by_run,
    createdAt: r.created_at,
    taint: { corruption: r.taint_corruption === 1, secret: r.taint_secret === 1 },
  };
}

/**
 * Scheduled tasks. Every state change is one UPDATE guarded by the state it expects, so the scheduler firing
 * a task and a run pausing it at the same moment cannot both win: the loser sees `false`.
 */
export function createTasksStore(
  db: Db,
  now: () => Date = () => new Date(),
  randomInt: (max: number) => number = crypto.randomInt,
) {
  const insert = db.prepare(
    `INSERT INTO tasks (id, group_id, prompt, schedule_json, status, next_run_at, created_by_run, created_at,
                        taint_corruption, taint_secret)
     VALUES (@id, @groupId, @prompt, @scheduleJson, 'active', @nextRunAt, @createdByRun, @createdAt,
             @corruption, @secret)
     ON CONFLICT (id) DO NOTHING`,
  );
  const byId = db.prepare<[string], TaskRow>('SELECT * FROM tasks WHERE id = ?');
  // Open tasks first (oldest first), then finished ones newest first, so a capped list keeps what matters.
  const order = `ORDER BY CASE WHEN status IN ('active', 'paused') THEN 0 ELSE 1 END,
                 CASE WHEN status IN ('active', 'paused') THEN created_at ELSE -created_at END, id`;
  const all = db.prepare<[number], TaskRow>(`SELECT * FROM tasks ${order} LIMIT ?`);
  const ofGroup = db.prepare<[string, number], TaskRow>(
    `SELECT * FROM tasks WHERE group_id = ? ${order} LIMIT ?`,
  );
  const openCount = db.prepare<[string], { n: number }>(
    `SELECT COUNT(*) AS n FROM tasks WHERE group_id = ? AND status IN ('active', 'paused')`,
  );
  const due = db.prepare<[number], TaskRow>(
    `SELECT * FROM tasks WHERE status = 'active' AND next_run_at <= ? ORDER BY next_run_at, id`,
  );
  const earliestAfter = db.prepare<[number], { at: number | null }>(
    `SELECT MIN(next_run_at) AS at FROM tasks WHERE status = 'active' AND next_run_at > ?`,
  );
  const advance = db.prepare(
    `UPDATE tasks SET status = @status, next_run_at = @nextRunAt, last_run_at = @lastRunAt
     WHERE id = @id AND status = 'active' AND next_run_at = @expectedNextRunAt`,
  );
  // A change by a tainted run taints the task; only the owner clears it (setTaint).
  const edit = db.prepare(
    `UPDATE tasks SET prompt = COALESCE(@prompt, prompt), schedule_json = COALESCE(@scheduleJson, schedule_json),
                      taint_corruption = MAX(taint_corruption, @corruption), taint_secret = MAX(taint_secret, @secret),
                      next_run_at = CASE WHEN @setNext = 1 THEN @nextRunAt ELSE next_run_at END
     WHERE id = @id AND status = @fromStatus`,
  );
  const pause = db.prepare(
    `UPDATE tasks SET status = 'paused', next_run_at = NULL WHERE id = ? AND status = 'active'`,
  );
  const resume = db.prepare(
    `UPDATE tasks SET status = 'active', next_run_at = ? WHERE id = ? AND status = 'paused'`,
  );
  const clearTaint = db.prepare('UPDATE tasks SET taint_corruption = 0, taint_secret = 0 WHERE id = ?');
  // Each open task looks up its creating run by id, rather than reading every run the group ever had.
  const taintedOf = db.prepare<[string, string], TaskRow>(
    `SELECT * FROM tasks WHERE status IN ('active', 'paused') AND (taint_corruption = 1 OR taint_secret = 1)
       AND (group_id = ? OR EXISTS (SELECT 1 FROM runs r WHERE r.id = tasks.created_by_run AND r.group_id = ?))
     ORDER BY created_at, id`,
  );
  const cancel = db.prepare(
    `UPDATE tasks SET status = 'cancelled', next_run_at = NULL WHERE id = ? AND status IN ('active', 'paused')`,
  );

  return {
    /** Stores a new active task under a fresh random id and returns it. */
    insert(t: NewTask): TaskRecord {
      const scheduleJson = JSON.stringify(taskScheduleSchema.parse(t.schedule));
      for (let attempt = 0; attempt < 10; attempt++) {
        const id = newTaskId(randomInt);
        const res = insert.run({
          id,
          groupId: t.groupId,
          prompt: t.prompt,
          scheduleJson,
          nextRunAt: t.nextRunAt,
          createdByRun: t.createdByRun,
          createdAt: now().getTime(),
          corruption: t.taint?.corruption ? 1 : 0,
          secret: t.taint?.secret ? 1 : 0,
        });
        if (res.changes === 1) return this.get(id) as TaskRecord;
      }
      throw new Error('could not draw an unused task id in 10 attempts; the random source looks broken');
    },
    get(id: string): TaskRecord | undefined {
      const r = byId.get(id);
      return r && toRecord(r);
    },
    /** Every task (or one group's), open ones first, at most `limit`. */
    list(groupId: string | undefined, limit: number): TaskRecord[] {
      return (groupId === undefined ? all.all(limit) : ofGroup.all(groupId, limit)).map(toRecord);
    },
    /** Active or paused tasks of a group. */
    openCount(groupId: string): number {
      return openCount.get(groupId)?.n ?? 0;
    },
    /** Active tasks whose next run is at or before `at`, earliest first. */
    due(at: number): TaskRecord[] {
      return due.all(at).map(toRecord);
    },
    /** The earliest next run strictly after `at` among active tasks. */
    earliestAfter(at: number): number | undefined {
      return earliestAfter.get(at)?.at ?? undefined;
    },
    /**
     * Records a firing: only if the task is still active and still due at `expectedNextRunAt`, so a task
     * changed or fired meanwhile is not fired again. False when the guard failed.
     */
    advance(id: string, expectedNextRunAt: number, a: TaskAdvance): boolean {
      return advance.run({ id, expectedNextRunAt, ...a }).changes === 1;
    },
    /**
     * Changes prompt and/or schedule of a task that is still in `fromStatus`. `nextRunAt` is written only
     * when given (an active task's new schedule); a paused task keeps none.
     */
    edit(
      id: string,
      fromStatus: 'active' | 'paused',
      changes: { prompt?: string; schedule?: TaskSchedule; nextRunAt?: number; taint?: TaskTaint },
    ): boolean {
      return (
        edit.run({
          id,
          fromStatus,
          corruption: changes.taint?.corruption ? 1 : 0,
          secret: changes.taint?.secret ? 1 : 0,
          prompt: changes.prompt ?? null,
          scheduleJson: changes.schedule ? JSON.stringify(taskScheduleSchema.parse(changes.schedule)) : null,
          setNext: changes.nextRunAt === undefined ? 0 : 1,
          nextRunAt: changes.nextRunAt ?? null,
        }).changes === 1
      );
    },
    /** active → paused; false otherwise. */
    pause(id: string): boolean {
      return pause.run(id).changes === 1;
    },
    /** paused → active, due next at `nextRunAt`; false otherwise. */
    resume(id: string, nextRunAt: number): boolean {
      return resume.run(nextRunAt, id).changes === 1;
    },
    /** Open tasks that carry a taint and belong to the group or were created by one of its runs. */
    taintedOf(groupId: string): TaskRecord[] {
      return taintedOf.all(groupId, groupId).map(toRecord);
    },
    /** The owner vouched for the task: it no longer passes a taint on. */
    clearTaint(id: string): boolean {
      return clearTaint.run(id).changes === 1;
    },
    /** active or paused → cancelled; false otherwise. */
    cancel(id: string): boolean {
      return cancel.run(id).changes === 1;
    },
  };
}

export type TasksStore = ReturnType<typeof createTasksStore>;
