import * as z from 'zod';
import type { HostClient } from '../ipc/host-client.ts';
import { LIMITS, groupIdSchema, taskIdSchema, taskScheduleSchema, type TaskSummary } from '../protocol.ts';
import { defineTool, type AgentTool } from './tool.ts';

const scheduleArg = taskScheduleSchema.check(
  z.describe(
    'When to run: {"kind":"cron","expr":"0 9 * * 1-5"} (in the group time zone), {"kind":"once","at":"<ISO 8601 with offset>"}, or {"kind":"interval","everyMs":3600000} (at least 60000).',
  ),
);

/** The schemas of the tools that name a group, whose description of it depends on who asks. */
const groupArgs = (description: string) => {
  const group = z.optional(groupIdSchema).describe(description);
  return {
    schedule: z
      .object({
        prompt: z
          .string()
          .min(1)
          .max(LIMITS.prompt)
          .describe('What to do when the task runs, written as an instruction to yourself.'),
        schedule: scheduleArg,
        group,
      })
      .strict(),
    list: z.object({ group }).strict(),
  };
};
// Made once, not per run: a tool list then reuses their JSON Schemas (memoizedToolSpec in tool.ts).
const adminArgs = groupArgs('Group id the task belongs to; omit for this group.');
const memberArgs = groupArgs('Omit: tasks belong to this group.');
const updateArgs = z
  .object({
    task_id: taskIdSchema,
    prompt: z.string().min(1).max(LIMITS.prompt).optional(),
    schedule: z.optional(scheduleArg),
  })
  .strict()
  .refine((a) => a.prompt !== undefined || a.schedule !== undefined, {
    message: 'give a new prompt, a new schedule, or both',
  });
const cancelArgs = z.object({ task_id: taskIdSchema }).strict();

export function createTaskTools(options: { host: HostClient; isAdmin: boolean }): AgentTool[] {
  const { host } = options;
  const args = options.isAdmin ? adminArgs : memberArgs;

  const scheduleTask = defineTool({
    name: 'schedule_task',
    description:
      'Schedule a prompt to run later, once or repeatedly. When it runs, you get the prompt and answer in the chat.',
    schema: args.schedule,
    async run(args, context) {
      const { taskId } = await host.request('task.schedule', withoutUndefined(args), {
        signal: context.signal,
      });
      return `Scheduled task ${taskId}.`;
    },
  });

  const listTasks = defineTool({
    name: 'list_tasks',
    description: 'List scheduled tasks.',
    schema: args.list,
    async run(args, context) {
      const { tasks } = await host.request('task.list', withoutUndefined(args), { signal: context.signal });
      if (tasks.length === 0) return 'No scheduled tasks.';
      return tasks.map(formatTask).join('\n');
    },
  });

  const updateTask = defineTool({
    name: 'update_task',
    description: 'Change the prompt and/or the schedule of a task.',
    schema: updateArgs,
    async run(args, context) {
      await host.request(
        'task.update',
        withoutUndefined({ taskId: args.task_id, prompt: args.prompt, schedule: args.schedule }),
        {
          signal: context.signal,
        },
      );
      return `Task ${args.task_id} updated.`;
    },
  });

  const cancelTask = defineTool({
    name: 'cancel_task',
    description: 'Cancel a scheduled task for good.',
    schema: cancelArgs,
    async run(args, context) {
      await host.request('task.cancel', { taskId: args.task_id }, { signal: context.signal });
      return `Task ${args.task_id} cancelled.`;
    },
  });

  return [scheduleTask, listTasks, updateTask, cancelTask];
}

function formatTask(task: TaskSummary): string {
  const schedule =
    task.schedule.kind === 'cron'
      ? `cron "${task.schedule.expr}"`
      : task.schedule.kind === 'once'
        ? `once at ${task.schedule.at}`
        : `every ${Math.round(task.schedule.everyMs / 60_000)} min`;
  const next = task.nextRunAt ? `, next ${task.nextRunAt}` : '';
  return `${task.taskId} [${task.group}, ${task.status}, ${schedule}${next}]: ${task.prompt}`;
}

/** Optional protocol fields are omitted rather than sent as undefined. */
export function withoutUndefined<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
