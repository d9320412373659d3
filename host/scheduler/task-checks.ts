import type { TaskSchedule } from '../../container-agent/src/protocol.ts';
import { DomainError, type DomainErrorKind } from '../errors/domain-error.ts';
import { errorMessage } from '../errors/error-message.ts';
import type { RunIdentity, Verdict } from '../security/decisions.ts';
import type { Taint } from '../security/taint/taint.ts';
import type { AuditStore } from '../store/audit-store.ts';
import type { GroupsStore } from '../store/groups-store.ts';
import type { TaskRecord, TasksStore } from '../store/tasks-store.ts';
import { firstRunAt, ScheduleError } from './next-run.ts';
import type { Scheduler } from './scheduler.ts';
import { taintedTaskNotice } from './tainted-task-notice.ts';

export type TaskMethod =
  'task.schedule' | 'task.list' | 'task.update' | 'task.pause' | 'task.resume' | 'task.cancel';

/** The operations that change what will later run on the host unattended, and so are reviewed first. */
export type TaskMutation = 'task.schedule' | 'task.update';

/**
 * Cop and, when it flags, the owner (`createMutationReview` in host/security, the same function
 * `group.register` uses). Anything but `allowed: true`, a throw included, is a denial.
 */
export type ReviewMutation = (
  identity: RunIdentity,
  operation: TaskMutation,
  params: Record<string, unknown>,
) => Promise<Verdict>;

export const DEFAULT_MAX_TASKS_PER_GROUP = 50;

export interface TaskHandlerDeps {
  /** Fixed by the host when it attached the run's stdio; the only source of authorization. */
  identity: RunIdentity;
  tasks: Pick<TasksStore, 'insert' | 'get' | 'list' | 'openCount' | 'edit' | 'pause' | 'resume' | 'cancel'>;
  groups: Pick<GroupsStore, 'get'>;
  scheduler: Pick<Scheduler, 'reschedule'>;
  /** `[assistant].timezone`: cron expressions are evaluated there. */
  timezone: string;
  reviewMutation: ReviewMutation;
  /** The run's taint: a task takes it on, and reading a stranger's prompt adds corruption. */
  taint: { get(runId: number): Taint; markCorrupted(runId: number): void };
  audit: Pick<AuditStore, 'record'>;
  /** Tells the owner once (by key) about a task a corrupted run scheduled or changed. */
  notifyOwner(key: string, text: string): void;
  now?: () => number;
  maxTasksPerGroup?: number;
}

/** Prefix of a refusal found only after a review: the time it took made the schedule unusable. */
export const WAITED = 'while the request waited for review: ';

/**
 * The checks every task method makes for one run, each refusal audited and thrown as a DomainError:
 * which group a request is about, which task it may see, whether the task can still change, when a
 * schedule first runs, and the review of a mutation. Decided from `identity` alone (the DESIGN table).
 */
export function createTaskChecks(deps: TaskHandlerDeps) {
  const { identity, tasks, groups, timezone, audit } = deps;
  const { group: own, runId } = identity;
  const now = deps.now ?? (() => Date.now());

  const record = (operation: TaskMethod, decision: string, reason: string, details: object) =>
    audit.record({ runId, groupId: own.id, operation, decision, reason, details });

  /** Refuses with an audited error. */
  const refuse = (
    operation: TaskMethod,
    kind: DomainErrorKind,
    decision: string,
    reason: string,
    details: object,
  ): never => {
    record(operation, decision, reason, details);
    throw new DomainError(kind, reason);
  };

  /** The group the request is about: its own unless the admin group names another. */
  function targetGroup(operation: TaskMethod, requested: string | undefined): string {
    if (requested === undefined || requested === own.id) return own.id;
    if (!own.isAdmin) {
      return refuse(
        operation,
        'forbidden',
        'denied',
        'this group may only manage its own tasks; leave out "group"',
        { group: requested },
      );
    }
    if (!groups.get(requested)) {
      return refuse(operation, 'invalid', 'invalid', `there is no group "${requested}"`, {
        group: requested,
      });
    }
    return requested;
  }

  function findTask(operation: TaskMethod, taskId: string): TaskRecord {
    const task = tasks.get(taskId);
    if (task && (own.isAdmin || task.groupId === own.id)) return task;
    if (own.isAdmin) {
      return refuse(operation, 'invalid', 'invalid', `there is no task "${taskId}"`, {
        taskId,
      });
    }
    // Same words and code whether the task is missing or another group's: the id's existence stays hidden.
    record(operation, 'denied', 'no such task in this group', { taskId, owner: task?.groupId ?? null });
    throw new DomainError('forbidden', `there is no task "${taskId}" in this group`);
  }

  function requireOpen(operation: TaskMethod, task: TaskRecord): 'active' | 'paused' {
    if (task.status === 'active' || task.status === 'paused') return task.status;
    return refuse(
      operation,
      'invalid',
      'invalid',
      `task ${task.id} is ${task.status} and can no longer change; schedule a new task instead`,
      { taskId: task.id, group: task.groupId },
    );
  }

  function computeFirstRun(
    operation: TaskMethod,
    schedule: TaskSchedule,
    details: object,
    prefix = '',
  ): number {
    try {
      return firstRunAt(schedule, now(), timezone);
    } catch (err) {
      if (!(err instanceof ScheduleError)) throw err;
      return refuse(operation, 'invalid', 'invalid', prefix + err.message, details);
    }
  }

  /** The review's reason when it allowed the mutation; a refusal otherwise. */
  async function review(operation: TaskMutation, params: Record<string, unknown>): Promise<string> {
    let verdict: Verdict;
    try {
      verdict = await deps.reviewMutation(identity, operation, params);
    } catch (err) {
      // Fails closed: a review that could not be made is a denial, never a pass.
      verdict = {
        allowed: false,
        reason: `the review could not be made: ${errorMessage(err)}`,
      };
    }
    if (verdict.allowed !== true) {
      refuse(operation, 'denied', 'denied', `${operation} was denied: ${verdict.reason}`, params);
    }
    return verdict.reason;
  }

  const announceIfTainted = (task: TaskRecord, changed: boolean) => {
    if (!task.taint.corruption) return;
    const notice = taintedTaskNotice(task, { runId, changed }, timezone);
    deps.notifyOwner(notice.key, notice.text);
  };

  return { record, refuse, targetGroup, findTask, requireOpen, computeFirstRun, review, announceIfTainted };
}

export type TaskChecks = ReturnType<typeof createTaskChecks>;
