import type { HostMethods } from '../../container-agent/src/protocol.ts';
import type { RpcHandlers } from '../../container-agent/src/rpc/peer.ts';
import type { TaskChecks, TaskHandlerDeps } from './task-checks.ts';

/**
 * `task.pause`, `task.resume` and `task.cancel`: a task's status changes, unreviewed (none of them adds
 * anything that runs), each guarded against the task changing between the read and the write.
 */
export function createTaskStatusHandlers(
  deps: TaskHandlerDeps,
  checks: TaskChecks,
): Pick<RpcHandlers<HostMethods>, 'task.pause' | 'task.resume' | 'task.cancel'> {
  const { tasks, scheduler } = deps;
  const { record, refuse, findTask, requireOpen, computeFirstRun } = checks;

  return {
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
