/**
 * The IPC protocol between the host and the agent in a container: JSON-RPC 2.0, one JSON frame per
 * line over the container's attached stdio. Both sides validate every frame with these schemas.
 *
 * The host imports this file and the container bundles it, so it depends on zod only.
 *
 * Identity, admin status and approvals come from the stream the host attached, never from a payload:
 * fields such as `group` or `to` in container → host methods are requests the host authorizes from the
 * run's identity. Never add fields like `isAdmin`, `approved` or `reviewed` to those methods.
 */
import { z } from 'zod';

export const JSONRPC_VERSION = '2.0';

/** A frame (one line, without its newline) may hold at most this many bytes. */
export const MAX_FRAME_BYTES = 1024 * 1024;

export const RPC_ERROR_CODES = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  /** The run's identity does not allow the operation (e.g. a non-admin group messaging another chat). */
  forbidden: -32001,
  /** A typed security denial (policy, Cop or human). Never to be read as "allow". */
  denied: -32002,
  frameTooLarge: -32003,
  runNotActive: -32004,
} as const;
export type RpcErrorCode = (typeof RPC_ERROR_CODES)[keyof typeof RPC_ERROR_CODES];

// ---------------------------------------------------------------------------------------------
// Bounds. Every string and array is bounded; the frame limit bounds the whole.

export const LIMITS = {
  chatText: 64 * 1024,
  messagesPerFrame: 1000,
  name: 256,
  reason: 2000,
  error: 4000,
  prompt: 8000,
  formatting: 8000,
  command: 64 * 1024,
  configPatch: 64 * 1024,
  /** config.toml as `config.read` returns it. */
  configText: 256 * 1024,
  configChanges: 50,
  /** A proposal's answer: the diff and the problems, one per line. */
  configDetail: 16 * 1024,
  tasks: 1000,
  groups: 1000,
} as const;

/** Same shape as the host's group ids: they name folders on disk, so they can never traverse paths. */
export const GROUP_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
export const groupIdSchema = z
  .string()
  .regex(
    GROUP_ID_PATTERN,
    'a group id is 1-64 lowercase letters, digits, "-" or "_", starting with a letter or digit',
  );

export const channelSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,31}$/, 'a channel name is a short lowercase word such as "telegram"');

export const isoTimestampSchema = z.iso.datetime({ offset: true });
export const taskIdSchema = z.string().min(1).max(64);

const boundedText = (max: number) => z.string().max(max);
const nonEmptyText = (max: number) => z.string().min(1).max(max);

// ---------------------------------------------------------------------------------------------
// Shared shapes

export const chatMessageSchema = z
  .object({
    /** The host's row id; increases monotonically, so it orders messages and deduplicates retries. */
    id: z.number().int().positive(),
    sender: boundedText(LIMITS.name),
    senderName: boundedText(LIMITS.name),
    text: boundedText(LIMITS.chatText),
    timestamp: isoTimestampSchema,
    fromAssistant: z.boolean(),
  })
  .strict();
export type ChatMessage = z.infer<typeof chatMessageSchema>;

const chatMessagesSchema = z.array(chatMessageSchema).max(LIMITS.messagesPerFrame);

/** Shortest interval a task may repeat at. */
export const MIN_TASK_INTERVAL_MS = 60_000;

export const taskScheduleSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('cron'),
      /** A cron expression, evaluated by the host in its [assistant] timezone. */
      expr: nonEmptyText(128),
    })
    .strict(),
  z
    .object({
      kind: z.literal('once'),
      /** ISO 8601 with an explicit offset, so it never depends on the container's clock zone. */
      at: isoTimestampSchema,
    })
    .strict(),
  z
    .object({
      kind: z.literal('interval'),
      everyMs: z
        .number()
        .int()
        .min(MIN_TASK_INTERVAL_MS)
        .max(366 * 24 * 3600 * 1000),
    })
    .strict(),
]);
export type TaskSchedule = z.infer<typeof taskScheduleSchema>;

export const taskSummarySchema = z
  .object({
    taskId: taskIdSchema,
    group: groupIdSchema,
    prompt: boundedText(LIMITS.prompt),
    schedule: taskScheduleSchema,
    status: z.enum(['active', 'paused', 'completed', 'cancelled']),
    nextRunAt: isoTimestampSchema.nullable(),
  })
  .strict();
export type TaskSummary = z.infer<typeof taskSummarySchema>;

export const groupSummarySchema = z
  .object({
    id: groupIdSchema,
    name: boundedText(LIMITS.name),
    channel: channelSchema,
    isAdmin: z.boolean(),
  })
  .strict();
export type GroupSummary = z.infer<typeof groupSummarySchema>;

export const runUsageSchema = z
  .object({
    promptTokens: z.number().int().nonnegative(),
    completionTokens: z.number().int().nonnegative(),
    toolSteps: z.number().int().nonnegative(),
  })
  .strict();
export type RunUsage = z.infer<typeof runUsageSchema>;

const okResult = z.object({ ok: z.literal(true) }).strict();
const taskIdParams = z.object({ taskId: taskIdSchema }).strict();

// ---------------------------------------------------------------------------------------------
// Host → container

export const runLimitsSchema = z
  .object({
    /** LLM rounds that may request tools; the round after the last one must answer without tools. */
    maxToolSteps: z.number().int().min(1).max(1000),
    /** Output tokens per LLM call. */
    maxOutputTokens: z.number().int().min(16).max(1_000_000),
    /** Wall time of the whole run, from run.start. */
    wallTimeMs: z
      .number()
      .int()
      .min(1000)
      .max(24 * 3600 * 1000),
  })
  .strict();
export type RunLimits = z.infer<typeof runLimitsSchema>;

export const runStartParamsSchema = z
  .object({
    runId: z.number().int().positive(),
    group: z
      .object({
        id: groupIdSchema,
        name: boundedText(LIMITS.name),
        isAdmin: z.boolean(),
        channel: channelSchema,
      })
      .strict(),
    assistantName: nonEmptyText(64),
    /** IANA zone name, e.g. "Europe/Berlin". */
    timezone: nonEmptyText(64),
    /** The channel's formatting rules, as prose for the model. */
    formatting: boundedText(LIMITS.formatting),
    messages: chatMessagesSchema,
    limits: runLimitsSchema,
    model: nonEmptyText(128).optional(),
    /**
     * The run's gateway key, issued when the run starts and revoked when it ends. It comes here, not in the
     * container's environment, so a container started ahead of its run holds no live key, and the agent
     * keeps it in memory only: never in its environment, files, logs or its commands' environment.
     */
    gatewayKey: nonEmptyText(256),
  })
  .strict();
export type RunStartParams = z.infer<typeof runStartParamsSchema>;

/** The host's ACK: the agent has taken in these messages; the group's cursor may move up to them. */
export const runStartResultSchema = z.object({ accepted: z.literal(true) }).strict();

export const runInputParamsSchema = z.object({ messages: chatMessagesSchema.min(1) }).strict();
/** `false` once the agent has decided to finish: the host then starts a new run for these messages. */
export const runInputResultSchema = z.object({ accepted: z.boolean() }).strict();

export const runStopParamsSchema = z.object({ reason: boundedText(LIMITS.reason) }).strict();

// ---------------------------------------------------------------------------------------------
// Container → host

export const messageSendParamsSchema = z
  .object({
    text: nonEmptyText(LIMITS.chatText),
    /** A group id; omitted = the run's own chat. */
    to: groupIdSchema.optional(),
    /**
     * The run's answer rather than a progress note. The agent's word, so it decides nothing of trust: only
     * whether a run cut off afterwards leaves its group a "not finished" notice.
     */
    final: z.literal(true).optional(),
  })
  .strict();
export const messageSendResultSchema = z.object({ queued: z.literal(true) }).strict();

export const taskScheduleParamsSchema = z
  .object({
    prompt: nonEmptyText(LIMITS.prompt),
    schedule: taskScheduleSchema,
    /** A group id; omitted = the run's own group. */
    group: groupIdSchema.optional(),
  })
  .strict();
export const taskScheduleResultSchema = z.object({ taskId: taskIdSchema }).strict();

export const taskListParamsSchema = z.object({ group: groupIdSchema.optional() }).strict();
export const taskListResultSchema = z
  .object({ tasks: z.array(taskSummarySchema).max(LIMITS.tasks) })
  .strict();

export const taskUpdateParamsSchema = z
  .object({
    taskId: taskIdSchema,
    prompt: nonEmptyText(LIMITS.prompt).optional(),
    schedule: taskScheduleSchema.optional(),
  })
  .strict()
  .refine((p) => p.prompt !== undefined || p.schedule !== undefined, {
    message: 'give a new prompt, a new schedule, or both',
  });

export const groupListParamsSchema = z.object({}).strict();
export const groupListResultSchema = z
  .object({ groups: z.array(groupSummarySchema).max(LIMITS.groups) })
  .strict();

export const groupRegisterParamsSchema = z
  .object({
    id: groupIdSchema,
    channel: channelSchema,
    chatId: nonEmptyText(LIMITS.name),
    name: nonEmptyText(LIMITS.name),
  })
  .strict();

export const bashCheckParamsSchema = z
  .object({
    command: nonEmptyText(LIMITS.command),
    /** Why the in-container classifier did not run it locally (informational; the host classifies itself). */
    localReason: boundedText(LIMITS.reason),
  })
  .strict();
export const bashCheckResultSchema = z
  .object({
    decision: z.enum(['allow', 'deny']),
    reason: boundedText(LIMITS.reason),
  })
  .strict();

/**
 * Sent before each command the agent runs, however it was decided: the host classifies it again, audits
 * it, and stops the run when it ran locally although the host's gate escalates it (a gate miss), or ran
 * "by the host's leave" without one. `via` and `reason` are the container's claims, never trusted.
 */
export const bashRanParamsSchema = z
  .object({
    command: nonEmptyText(LIMITS.command),
    via: z.enum(['local', 'host', 'unreachable-host-allowed']),
    reason: boundedText(LIMITS.reason),
  })
  .strict();

/**
 * Sent before a file tool reads (`read_file`, `grep`, `edit_file`), with the real path it is about to read
 * (symlinks resolved). The host decides from its own mount plan whether the path lies in a mount that
 * held secrets, and taints the run; nothing here says whether it does. A report that cannot be sent
 * blocks the read.
 */
export const fileReadParamsSchema = z
  .object({
    path: nonEmptyText(4096),
    tool: z.enum(['read_file', 'grep', 'edit_file']),
  })
  .strict();

export const serviceCallParamsSchema = z
  .object({
    service: z
      .string()
      .regex(/^[a-z][a-z0-9_]{0,63}$/, 'a service name is a lowercase identifier such as "web_fetch"'),
    params: z.unknown(),
  })
  .strict();
export const serviceCallResultSchema = z.object({ result: z.unknown() }).strict();

/** sha256 of config.toml's bytes, as `config.read` returned it. */
export const configHashSchema = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'a config hash is the 64 hex digits config.read returned');

export const configReadParamsSchema = z.object({}).strict();
export const configReadResultSchema = z
  .object({
    /** config.toml with anything that looks like a secret replaced by [REDACTED]. */
    text: boundedText(LIMITS.configText),
    hash: configHashSchema,
  })
  .strict();

/** A TOML-representable value (no null: a patch cannot delete a key), bounded by its JSON size. */
const configValueSchema = z.json().refine((v) => JSON.stringify(v).length <= LIMITS.configPatch, {
  message: `a value may be at most ${LIMITS.configPatch} characters as JSON`,
});

export const configProposeParamsSchema = z
  .object({
    /** The hash of the version the change is based on: a file changed since is refused, never merged. */
    baseHash: configHashSchema,
    changes: z
      .array(
        z
          .object({
            /** A dotted key path such as `assistant.name` or `groups.family.trigger`. */
            key: nonEmptyText(LIMITS.name),
            value: configValueSchema,
          })
          .strict(),
      )
      .min(1)
      .max(LIMITS.configChanges),
    reason: nonEmptyText(LIMITS.reason),
  })
  .strict();
export const configProposeResultSchema = z
  .object({
    /**
     * applied: written and handed to the running host; refused: the host's checks said no before anyone
     * was asked (invalid, protected, stale); denied: the owner did not approve (or did not answer).
     */
    status: z.enum(['applied', 'refused', 'denied']),
    detail: boundedText(LIMITS.configDetail),
  })
  .strict();

export const runDoneParamsSchema = z
  .object({
    status: z.enum(['ok', 'error']),
    error: boundedText(LIMITS.error).optional(),
    usage: runUsageSchema.optional(),
  })
  .strict();

// ---------------------------------------------------------------------------------------------
// Method tables

export interface MethodSpec {
  params: z.ZodType;
  /** For notifications the result is never sent; `z.void()` by convention. */
  result: z.ZodType;
  /** Sent without an id; no reply is expected or sent. */
  notification?: boolean;
}
export type MethodTable = Record<string, MethodSpec>;

/** Methods the host serves (container → host). */
export const hostMethods = {
  'message.send': { params: messageSendParamsSchema, result: messageSendResultSchema },
  'task.schedule': { params: taskScheduleParamsSchema, result: taskScheduleResultSchema },
  'task.list': { params: taskListParamsSchema, result: taskListResultSchema },
  'task.update': { params: taskUpdateParamsSchema, result: okResult },
  'task.pause': { params: taskIdParams, result: okResult },
  'task.resume': { params: taskIdParams, result: okResult },
  'task.cancel': { params: taskIdParams, result: okResult },
  'group.list': { params: groupListParamsSchema, result: groupListResultSchema },
  'group.register': { params: groupRegisterParamsSchema, result: okResult },
  'security.bash_check': { params: bashCheckParamsSchema, result: bashCheckResultSchema },
  'bash.ran': { params: bashRanParamsSchema, result: z.void(), notification: true },
  'file.read': { params: fileReadParamsSchema, result: z.void(), notification: true },
  'service.call': { params: serviceCallParamsSchema, result: serviceCallResultSchema },
  'config.read': { params: configReadParamsSchema, result: configReadResultSchema },
  'config.propose': { params: configProposeParamsSchema, result: configProposeResultSchema },
  'run.done': { params: runDoneParamsSchema, result: okResult },
} as const satisfies MethodTable;

/** Methods the agent serves (host → container). */
export const agentMethods = {
  'run.start': { params: runStartParamsSchema, result: runStartResultSchema },
  'run.input': { params: runInputParamsSchema, result: runInputResultSchema },
  'run.stop': { params: runStopParamsSchema, result: z.void(), notification: true },
} as const satisfies MethodTable;

export type HostMethods = typeof hostMethods;
export type AgentMethods = typeof agentMethods;
export type HostMethodName = keyof HostMethods;
export type AgentMethodName = keyof AgentMethods;

/** What a caller passes (before parsing). */
export type ParamsIn<T extends MethodTable, M extends keyof T> = z.input<T[M]['params']>;
/** What a handler receives (after parsing). */
export type ParamsOut<T extends MethodTable, M extends keyof T> = z.output<T[M]['params']>;
/** What a handler returns (before validation). */
export type ResultIn<T extends MethodTable, M extends keyof T> = z.input<T[M]['result']>;
/** What a caller receives (after validation). */
export type ResultOut<T extends MethodTable, M extends keyof T> = z.output<T[M]['result']>;
