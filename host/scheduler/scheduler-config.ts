import { z } from 'zod';
import { LIMITS } from '../../container-agent/src/protocol.ts';

/** `[scheduler]`. Every key has a default, so `{}` is valid. */
export const schedulerConfigSchema = z
  .object({
    /** Active plus paused tasks one group may hold; bounded so a group's task list always fits one reply. */
    max_tasks_per_group: z.number().int().min(1).max(LIMITS.tasks).default(50),
    /** How long a task whose message could not be stored waits before the next attempt. */
    delivery_retry_ms: z.number().int().min(1_000).max(3_600_000).default(60_000),
  })
  .strict();

export type SchedulerConfig = z.infer<typeof schedulerConfigSchema>;
