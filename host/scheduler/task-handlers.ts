import {
  LIMITS,
  type HostMethods,
  type TaskSchedule,
  type TaskSummary,
} from '../../container-agent/src/protocol.ts';
import { DomainError, type DomainErrorKind } from '../errors/domain-error.ts';
import type { RpcHandlers } from '../../container-agent/src/rpc/peer.ts';
import type { RunIdentity, Verdict } from '../security/decisions.ts';
import type { Taint } from '../security/taint/taint.ts';
import { fenceStrangerText } from '../services/untrusted-fence.ts';
import type { AuditStore } from '../store/audit-store.ts';
import type { GroupsStore } from '../store/groups-store.ts';
import type { TaskRecord, TasksStore } from '../store/tasks-store.ts';
import { firstRunAt, ScheduleError } from './next-run.ts';
import { taintedTaskNotice } from './tainted-task-notice.ts';
import type { Scheduler } from './scheduler.ts';
import { errorMessage } from '../errors/error-message.ts';

export type TaskMethod =
  'task.schedule' | 'task.list' | 'task.update' | 'task.pause' | 'task.resume' | 'task.cancel';
export type TaskHandlers = Pick<RpcHandlers<HostMethods>, TaskMethod>;

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

/**
 * A prompt is a stranger's text when its group is not the admin group, or when a tainted run wrote it:
 * either way it reaches the reading run fenced, and the run counts as having read untrusted text.
 */
function isStrangerText(t: TaskRecord, groupIsAdmin: boolean): boolean {
  return !groupIsAdmin || t.taint.corruption;
}

function toSummary(t: TaskRecord, fenced: boolean): TaskSummary {
  return {
    taskId: t.id,
    group: t.groupId,
    prompt: fenced ? fenceStrangerText(`a task of group ${t.groupId}`, t.prompt, LIMITS.prompt) : t.prompt,
    schedule: t.schedule,
    status: t.status,
    nextRunAt: t.nextRunAt === null ? null : new Date(t.nextRunAt).toISOString(),
  };
}

/**
 * The task methods of one run. Who may act on which group's tasks is decided from `identity` alone (the
 * DESIGN table): every group manages its own tasks; only the admin group may name another group or see all.
 * A non-admin asking about a task of another group gets the same answer as for a task that does not exist.
 * Every decision is audited.
 */
export function createTaskHandlers(deps: TaskHandlerDeps): TaskHandlers {
  const { identity, tasks, groups, scheduler, timezone, audit } = deps;
  const { group: own, runId } = identity;
  const now = deps.now ?? (() => Date.now());
  const maxTasks = deps.maxTasksPerGroup ?? DEFAULT_MAX_TASKS_PER_GROUP;

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

  const WAITED = 'while the request waited for review: ';

  const announceIfTainted = (task: TaskRecord, changed: boolean) => {
    if (!task.taint.corruption) return;
    const notice = taintedTaskNotice(task, { runId, changed }, timezone);
    deps.notifyOwner(notice.key, notice.text);
  };

  return {
    async 'task.schedule'({ prompt, schedule, group }) {
      const target = targetGroup('task.schedule', group);
      const details = { group: target, prompt, schedule };
      if (tasks.openCount(target) >= maxTasks) {
        refuse(
          'task.schedule',
          'invalid',
          'invalid',
          `group "${target}" already has ${maxTasks} active or paused tasks; cancel one before scheduling another`,
          details,
        );
      }
      // Checked before the review so the reviewer (and the owner) are never asked about a task that cannot run.
      computeFirstRun('task.schedule', schedule, details);
      const reviewReason = await review('task.schedule', details);
      // The review may have taken minutes (a human); the first run is computed from the time it ended.
      const nextRunAt = computeFirstRun('task.schedule', schedule, details, WAITED);
      const task = tasks.insert({
        groupId: target,
        prompt,
        schedule,
        nextRunAt,
        createdByRun: runId,
        taint: deps.taint.get(runId),
      });
      scheduler.reschedule();
      record('task.schedule', 'allowed', reviewReason, { ...details, taskId: task.id, nextRunAt });
      announceIfTainted(task, false);
      return { taskId: task.id };
    },

    async 'task.list'({ group }) {
      // Without a group, the admin group sees every task and any other group its own.
      const scope = group === undefined && own.isAdmin ? undefined : targetGroup('task.list', group);
      const list = tasks.list(scope, LIMITS.tasks);
      const adminGroups = new Map<string, boolean>();
      const isAdminGroup = (id: string) => {
        if (!adminGroups.has(id)) adminGroups.set(id, groups.get(id)?.isAdmin === true);
        return adminGroups.get(id) === true;
      };
      const summaries = list.map((t) => toSummary(t, isStrangerText(t, isAdminGroup(t.groupId))));
      const strangers = list.filter((t) => isStrangerText(t, isAdminGroup(t.groupId))).length;
      if (strangers > 0) deps.taint.markCorrupted(runId);
      record('task.list', 'allowed', scope === undefined ? 'all tasks' : `tasks of group "${scope}"`, {
        group: scope ?? null,
        count: list.length,
        untrusted: strangers,
      });
      return { tasks: summaries };
    },

    async 'task.update'({ taskId, prompt, schedule }) {
      const task = findTask('task.update', taskId);
      requireOpen('task.update', task);
      const details: Record<string, unknown> = { taskId, group: task.groupId };
      if (prompt !== undefined) details.prompt = prompt;
      if (schedule !== undefined) details.schedule = schedule;
      if (schedule) computeFirstRun('task.update', schedule, details);
      const reviewReason = await review('task.update', details);
      // Re-read: the task may have been paused, cancelled or fired while the review waited.
      const current = tasks.get(taskId) ?? task;
      const status = requireOpen('task.update', current);
      const nextRunAt =
        schedule && status === 'active'
          ? computeFirstRun('task.update', schedule, details, WAITED)
          : undefined;
      if (!tasks.edit(taskId, status, { prompt, schedule, nextRunAt, taint: deps.taint.get(runId) })) {
        refuse(
          'task.update',
          'invalid',
          'invalid',
          `task ${taskId} changed while the update was under review; try again`,
          details,
        );
      }
      scheduler.reschedule();
      record('task.update', 'allowed', reviewReason, {
        ...details,
        nextRunAt: nextRunAt ?? current.nextRunAt,
      });
      const updated = tasks.get(taskId);
      if (updated) announceIfTainted(updated, true);
      return { ok: true };
    },

    async 'task.pause'({ taskId }) {
      const task = findTask('task.pause', taskId);
      const details = { taskId, group: task.groupId };
      if (requireOpen('task.pause', task) === 'active' && !tasks.pause(taskId)) {
        refuse('task.pause', 'invalid', 'invalid', `task ${taskId} changed meanwhile; try again`, details);
      }
      scheduler.reschedule();
      record('task.pause', 'allowed', task.status === 'paused' ? 'already paused' : 'paused', details);
      return { ok: true };
    },

    async 'task.resume'({ taskId }) {
      const task = findTask('task.resume', taskId);
      const details = { taskId, group: task.groupId };
      if (requireOpen('task.resume', task) === 'active') {
        record('task.resume', 'allowed', 'already active', details);
        return { ok: true };
      }
      const nextRunAt = computeFirstRun(
        'task.resume',
        task.schedule,
        details,
        `task ${taskId} cannot resume with its schedule (give it a new one with task.update first): `,
      );
      if (!tasks.resume(taskId, nextRunAt)) {
        refuse('task.resume', 'invalid', 'invalid', `task ${taskId} changed meanwhile; try again`, details);
      }
      scheduler.reschedule();
      record('task.resume', 'allowed', 'resumed', { ...details, nextRunAt });
      return { ok: true };
    },

    async 'task.cancel'({ taskId }) {
      const task = findTask('task.cancel', taskId);
      const details = { taskId, group: task.groupId };
      if (task.status === 'cancelled') {
        record('task.cancel', 'allowed', 'already cancelled', details);
        return { ok: true };
      }
      requireOpen('task.cancel', task);
      if (!tasks.cancel(taskId)) {
        refuse('task.cancel', 'invalid', 'invalid', `task ${taskId} changed meanwhile; try again`, details);
      }
      scheduler.reschedule();
      record('task.cancel', 'allowed', 'cancelled', details);
      return { ok: true };
    },
  };
}
