import type { HostMethods } from '../../container-agent/src/protocol.ts';
import type { RpcHandlers } from '../../container-agent/src/rpc/peer.ts';
import { WAITED, type TaskChecks, type TaskHandlerDeps, type TaskMutation } from './task-checks.ts';

/**
 * `task.schedule` and `task.update`: the methods that change what later runs unattended, so each is
 * reviewed (Cop, then the owner when it flags) before it is written, and re-checked after the review,
 * which may have taken minutes.
 */
export function createTaskMutationHandlers(
  deps: TaskHandlerDeps,
  checks: TaskChecks,
  maxTasks: number,
): Pick<RpcHandlers<HostMethods>, TaskMutation> {
  const { tasks, scheduler } = deps;
  const { runId } = deps.identity;
  const { record, refuse, targetGroup, findTask, requireOpen, computeFirstRun, review, announceIfTainted } =
    checks;

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
  };
}
