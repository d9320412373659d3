import type { TaskSchedule } from '../../container-agent/src/protocol.ts';
import type { AuditStore } from '../store/audit-store.ts';
import type { TaskRecord, TasksStore } from '../store/tasks-store.ts';
import type { Scheduler } from './scheduler.ts';

/** How much of a task's prompt the owner's notice quotes. */
const PROMPT_EXCERPT = 200;

/**
 * A task that a run which had read untrusted content scheduled (or changed) keeps running with that taint,
 * which is right, but it also keeps a stranger's prompt alive on the host unattended: the owner is told
 * once per task and run (the key), with what it asks, where, how often and the one word that ends it.
 */
export function taintedTaskNotice(
  task: TaskRecord,
  by: { runId: number; changed: boolean },
  timezone: string,
): { key: string; text: string } {
  const prompt =
    task.prompt.length > PROMPT_EXCERPT ? `${task.prompt.slice(0, PROMPT_EXCERPT)}…` : task.prompt;
  const next =
    task.nextRunAt === null
      ? 'not due to run'
      : `next ${new Date(task.nextRunAt).toLocaleString('en-GB', { timeZone: timezone, dateStyle: 'medium', timeStyle: 'short' })}`;
  return {
    key: `task-tainted:${task.id}:${by.runId}`,
    text:
      `A run of ${task.groupId} that had read untrusted content ${by.changed ? 'changed' : 'scheduled'} ` +
      `task ${task.id} in ${task.groupId}: ${describeSchedule(task.schedule)}, ${next}, asking ` +
      `${JSON.stringify(prompt)}. Its runs start with that taint (they cannot send data out without you). ` +
      `Send "cancel ${task.id}" to cancel it.`,
  };
}

/** A schedule in words: `on the schedule "0 9 * * *" (cron)`, "once", "every 30 min", "every 2 h". */
export function describeSchedule(schedule: TaskSchedule): string {
  switch (schedule.kind) {
    case 'cron':
      return `on the schedule "${schedule.expr}" (cron)`;
    case 'once':
      return 'once';
    case 'interval': {
      const minutes = schedule.everyMs / 60_000;
      return minutes >= 60 && minutes % 60 === 0 ? `every ${minutes / 60} h` : `every ${minutes} min`;
    }
  }
}

export interface OwnerTaskCancelDeps {
  tasks: Pick<TasksStore, 'get' | 'cancel'>;
  scheduler: Pick<Scheduler, 'reschedule'>;
  audit: Pick<AuditStore, 'record'>;
}

/**
 * The owner's `cancel <task id>` from an admin chat: cancels any group's open task, audited. Undefined when
 * no task has that id (the words were not a command).
 */
export function createOwnerTaskCancel(deps: OwnerTaskCancelDeps) {
  return (taskId: string, by: string): string | undefined => {
    const task = deps.tasks.get(taskId);
    if (!task) return undefined;
    if (!deps.tasks.cancel(taskId)) return `Task ${taskId} is ${task.status} already.`;
    deps.scheduler.reschedule();
    deps.audit.record({
      groupId: task.groupId,
      operation: 'task.cancel',
      decision: 'allowed',
      reason: 'cancelled by the owner',
      approver: by,
      details: { taskId, group: task.groupId },
    });
    return `Task ${taskId} of ${task.groupId} is cancelled.`;
  };
}
