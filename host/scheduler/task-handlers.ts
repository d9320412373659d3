import { LIMITS, type HostMethods, type TaskSummary } from '../../container-agent/src/protocol.ts';
import type { RpcHandlers } from '../../container-agent/src/rpc/peer.ts';
import { fenceStrangerText } from '../services/untrusted-fence.ts';
import type { TaskRecord } from '../store/tasks-store.ts';
import {
  createTaskChecks,
  DEFAULT_MAX_TASKS_PER_GROUP,
  type TaskChecks,
  type TaskHandlerDeps,
  type TaskMethod,
} from './task-checks.ts';
import { createTaskMutationHandlers } from './task-mutation-handlers.ts';
import { createTaskStatusHandlers } from './task-status-handlers.ts';

export type { ReviewMutation, TaskMethod, TaskMutation } from './task-checks.ts';
export type TaskHandlers = Pick<RpcHandlers<HostMethods>, TaskMethod>;

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

/** `task.list`: the tasks a run may see, a stranger's prompt fenced and counted as untrusted reading. */
function createTaskListHandler(
  deps: TaskHandlerDeps,
  checks: TaskChecks,
): Pick<RpcHandlers<HostMethods>, 'task.list'> {
  const { identity, tasks, groups } = deps;
  const { group: own, runId } = identity;
  return {
    async 'task.list'({ group }) {
      // Without a group, the admin group sees every task and any other group its own.
      const scope = group === undefined && own.isAdmin ? undefined : checks.targetGroup('task.list', group);
      const list = tasks.list(scope, LIMITS.tasks);
      const adminGroups = new Map<string, boolean>();
      const isAdminGroup = (id: string) => {
        if (!adminGroups.has(id)) adminGroups.set(id, groups.get(id)?.isAdmin === true);
        return adminGroups.get(id) === true;
      };
      const summaries = list.map((t) => toSummary(t, isStrangerText(t, isAdminGroup(t.groupId))));
      const strangers = list.filter((t) => isStrangerText(t, isAdminGroup(t.groupId))).length;
      if (strangers > 0) deps.taint.markCorrupted(runId);
      checks.record('task.list', 'allowed', scope === undefined ? 'all tasks' : `tasks of group "${scope}"`, {
        group: scope ?? null,
        count: list.length,
        untrusted: strangers,
      });
      return { tasks: summaries };
    },
  };
}

/**
 * The task methods of one run. Who may act on which group's tasks is decided from `identity` alone (the
 * DESIGN table): every group manages its own tasks; only the admin group may name another group or see all.
 * A non-admin asking about a task of another group gets the same answer as for a task that does not exist.
 * Every decision is audited.
 */
export function createTaskHandlers(deps: TaskHandlerDeps): TaskHandlers {
  const checks = createTaskChecks(deps);
  return {
    ...createTaskMutationHandlers(deps, checks, deps.maxTasksPerGroup ?? DEFAULT_MAX_TASKS_PER_GROUP),
    ...createTaskListHandler(deps, checks),
    ...createTaskStatusHandlers(deps, checks),
  };
}
