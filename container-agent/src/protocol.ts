/**
 * The IPC protocol between the host and the agent in a container: JSON-RPC 2.0, one JSON frame per
 * line over the container's attached stdio. Both sides validate every frame with these schemas.
 *
 * The host imports this file and the container bundles it, so it depends on zod only. It is written with
 * zod's functional API (`zod/mini`): the agent reads run.start as soon as it boots, and classic zod costs a
 * container start tens of milliseconds to load (DESIGN.md, Agent boot). Classic schemas take these as
 * parts: both share zod's core.
 *
 * Identity, admin status and approvals come from the stream the host attached, never from a payload:
 * fields such as `group` or `to` in container → host methods are requests the host authorizes from the
 * run's identity. Never add fields like `isAdmin`, `approved` or `reviewed` to those methods.
 */
import * as z from 'zod/mini';

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
  persona: 2000,
  command: 64 * 1024,
  configPatch: 64 * 1024,
  /** config.toml as `config.read` returns it. */
  configText: 256 * 1024,
  configChanges: 50,
  /** A proposal's answer: the diff and the problems, one per line. */
  configDetail: 16 * 1024,
  tasks: 1000,
  groups: 1000,
  /**
   * Tools of the group's MCP services offered to one run (with the agent's own, under the 128 tools an
   * OpenAI-style request may carry), and the bounds of each.
   */
  serviceTools: 100,
  toolDescription: 2000,
  toolSchema: 16 * 1024,
  /** memory.search: the query, the hits of one search and the text of each (whole, or around the match). */
  memoryQuery: 500,
  memoryHits: 20,
  memoryHitText: 4000,
  /** read_attachment's own bound on a document's text (container-agent/src/tools/read-attachment.ts). */
  documentText: 60_000,
  /** A note `remember` writes. */
  memoryNote: 8000,
  /**
   * A streamed draft of the reply (`run.draft`): the whole text so far. Longer than any one platform
   * message (Telegram's 4096): past that the host stops streaming and the reply arrives whole.
   */
  draftText: 16 * 1024,
} as const;

/** Same shape as the host's group ids: they name folders on disk, so they can never traverse paths. */
export const GROUP_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
export const groupIdSchema = z
  .string()
  .check(
    z.regex(
      GROUP_ID_PATTERN,
      'a group id is 1-64 lowercase letters, digits, "-" or "_", starting with a letter or digit',
    ),
  );

/**
 * A channel as the host names it: the channel (`telegram`) or one of its named accounts (`telegram.work`,
 * the account as `[channels.telegram.work]` names it). A group of a named account runs under that label.
 */
export const channelSchema = z
  .string()
  .check(
    z.regex(
      /^[a-z][a-z0-9_-]{0,31}(\.[a-z0-9][a-z0-9-]{0,31})?$/,
      'a channel is a short lowercase word such as "telegram", or one of its accounts such as "telegram.work"',
    ),
  );

export const isoTimestampSchema = z.iso.datetime({ offset: true });
export const taskIdSchema = z.string().check(z.minLength(1), z.maxLength(64));

const boundedText = (max: number) => z.string().check(z.maxLength(max));
const nonEmptyText = (max: number) => z.string().check(z.minLength(1), z.maxLength(max));
const positiveInt = z.int().check(z.positive());
const nonNegativeInt = z.int().check(z.nonnegative());
const intBetween = (min: number, max: number) => z.int().check(z.minimum(min), z.maximum(max));

// ---------------------------------------------------------------------------------------------
// Shared shapes

export const chatMessageSchema = z.strictObject({
  /** The host's row id; increases monotonically, so it orders messages and deduplicates retries. */
  id: positiveInt,
  sender: boundedText(LIMITS.name),
  senderName: boundedText(LIMITS.name),
  text: boundedText(LIMITS.chatText),
  timestamp: isoTimestampSchema,
  fromAssistant: z.boolean(),
  /**
   * A photo the message carried, stored by the host in the group folder (`media/…`, relative to it), that
   * the model may be shown as an image part: the host sets it only when the configured model sees images
   * and the file is within `[media] max_image_bytes`. The agent reads it from its own mount.
   */
  image: z.optional(
    z.strictObject({
      path: nonEmptyText(512),
      mime: z.enum(['image/png', 'image/jpeg', 'image/webp', 'image/gif']),
    }),
  ),
});
export type ChatMessage = z.infer<typeof chatMessageSchema>;

const chatMessagesSchema = z.array(chatMessageSchema).check(z.maxLength(LIMITS.messagesPerFrame));

/** Shortest interval a task may repeat at. */
export const MIN_TASK_INTERVAL_MS = 60_000;

export const taskScheduleSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('cron'),
    /** A cron expression, evaluated by the host in its [assistant] timezone. */
    expr: nonEmptyText(128),
  }),
  z.strictObject({
    kind: z.literal('once'),
    /** ISO 8601 with an explicit offset, so it never depends on the container's clock zone. */
    at: isoTimestampSchema,
  }),
  z.strictObject({
    kind: z.literal('interval'),
    everyMs: intBetween(MIN_TASK_INTERVAL_MS, 366 * 24 * 3600 * 1000),
  }),
]);
export type TaskSchedule = z.infer<typeof taskScheduleSchema>;

export const taskSummarySchema = z.strictObject({
  taskId: taskIdSchema,
  group: groupIdSchema,
  prompt: boundedText(LIMITS.prompt),
  schedule: taskScheduleSchema,
  status: z.enum(['active', 'paused', 'completed', 'cancelled']),
  nextRunAt: z.nullable(isoTimestampSchema),
});
export type TaskSummary = z.infer<typeof taskSummarySchema>;

export const groupSummarySchema = z.strictObject({
  id: groupIdSchema,
  name: boundedText(LIMITS.name),
  channel: channelSchema,
  isAdmin: z.boolean(),
});

export const runUsageSchema = z.strictObject({
  promptTokens: nonNegativeInt,
  completionTokens: nonNegativeInt,
  toolSteps: nonNegativeInt,
});
export type RunUsage = z.infer<typeof runUsageSchema>;

const okResult = z.strictObject({ ok: z.literal(true) });
const taskIdParams = z.strictObject({ taskId: taskIdSchema });

// ---------------------------------------------------------------------------------------------
// Host → container

export const runLimitsSchema = z.strictObject({
  /** LLM rounds that may request tools; the round after the last one must answer without tools. */
  maxToolSteps: intBetween(1, 1000),
  /** Output tokens per LLM call. */
  maxOutputTokens: intBetween(16, 1_000_000),
  /** Wall time of the whole run, from run.start. */
  wallTimeMs: intBetween(1000, 24 * 3600 * 1000),
});
export type RunLimits = z.infer<typeof runLimitsSchema>;

const serviceNameSchema = z
  .string()
  .check(z.regex(/^[a-z][a-z0-9_]{0,63}$/, 'a service name is a lowercase identifier such as "web_fetch"'));
/** The names MCP recommends for tools; the host leaves out a tool named otherwise. */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;
const toolNameSchema = z
  .string()
  .check(z.regex(TOOL_NAME_PATTERN, 'a tool name is 1-128 letters, digits, "_", "-" or "."'));

/**
 * One tool of an MCP server the group may use, as the host listed it. The description and the schema are
 * the server's words: the host cleaned and bounded them, and decides every call again from its own list.
 */
export const serviceToolSchema = z.strictObject({
  service: serviceNameSchema,
  tool: toolNameSchema,
  description: boundedText(LIMITS.toolDescription),
  inputSchema: z.record(z.string(), z.unknown()).check(
    z.refine((v) => JSON.stringify(v).length <= LIMITS.toolSchema, {
      message: `a tool's input schema may be at most ${LIMITS.toolSchema} characters as JSON`,
    }),
  ),
});
export type ServiceTool = z.infer<typeof serviceToolSchema>;

/**
 * What the run's commands get from the host on top of their usual environment (DESIGN.md, "Credentials"):
 * the credential routes' URL and the run's credential key (good for this run's credentials only, dead when
 * the run ends), the group's git identity, and git settings (`url.<route>.insteadOf <remote>`, the key as a
 * header for the route only). Never the gateway key and never a credential's value: those stay on the host.
 */
export const commandSetupSchema = z.strictObject({
  env: z.record(
    z.string().check(z.regex(/^(CARAPACE_[A-Z0-9_]{1,60}|GIT_(AUTHOR|COMMITTER)_(NAME|EMAIL))$/)),
    boundedText(4096),
  ),
  gitConfig: z
    .array(z.strictObject({ key: nonEmptyText(1024), value: boundedText(4096) }))
    .check(z.maxLength(64)),
});
export type CommandSetup = z.infer<typeof commandSetupSchema>;

export const runStartParamsSchema = z.strictObject({
  runId: positiveInt,
  group: z.strictObject({
    id: groupIdSchema,
    name: boundedText(LIMITS.name),
    isAdmin: z.boolean(),
    channel: channelSchema,
  }),
  assistantName: nonEmptyText(64),
  /** IANA zone name, e.g. "Europe/Berlin". */
  timezone: nonEmptyText(64),
  /** The channel's formatting rules, as prose for the model. */
  formatting: boundedText(LIMITS.formatting),
  /** How the owner wants the assistant to present itself in this group (its account's or its own persona). */
  persona: z.optional(nonEmptyText(LIMITS.persona)),
  messages: chatMessagesSchema,
  limits: runLimitsSchema,
  model: z.optional(nonEmptyText(128)),
  /**
   * The run's gateway key, issued when the run starts and revoked when it ends. It comes here, not in the
   * container's environment, so a container started ahead of its run holds no live key, and the agent
   * keeps it in memory only: never in its environment, files, logs or its commands' environment.
   */
  gatewayKey: nonEmptyText(256),
  /** The tools of the group's MCP services; the agent calls them with `service.call` and `tool`. */
  serviceTools: z.optional(z.array(serviceToolSchema).check(z.maxLength(LIMITS.serviceTools))),
  commandSetup: z.optional(commandSetupSchema),
  /**
   * The host takes `run.draft` notifications of this run's answer (its chat can edit a message, and the
   * host gates every draft): the agent then asks the model for a stream. Absent or false: no drafts.
   */
  drafts: z.optional(z.boolean()),
});
export type RunStartParams = z.infer<typeof runStartParamsSchema>;

/** The host's ACK: the agent has taken in these messages; the group's cursor may move up to them. */
export const runStartResultSchema = z.strictObject({ accepted: z.literal(true) });

export const runInputParamsSchema = z.strictObject({ messages: chatMessagesSchema.check(z.minLength(1)) });
/** `false` once the agent has decided to finish: the host then starts a new run for these messages. */
export const runInputResultSchema = z.strictObject({ accepted: z.boolean() });

export const runStopParamsSchema = z.strictObject({ reason: boundedText(LIMITS.reason) });

// ---------------------------------------------------------------------------------------------
// Container → host

export const messageSendParamsSchema = z.strictObject({
  text: nonEmptyText(LIMITS.chatText),
  /** A group id; omitted = the run's own chat. */
  to: z.optional(groupIdSchema),
  /**
   * The run's answer rather than a progress note. The agent's word, so it decides nothing of trust: only
   * whether a run cut off afterwards leaves its group a "not finished" notice.
   */
  final: z.optional(z.literal(true)),
  /**
   * A file to send with the message, to the run's own chat only: a path in the group folder (relative to
   * it, or absolute under /workspace/group). The host resolves and reads it itself, confined to the group
   * folder, sniffs its type and reviews it like the text.
   */
  attachment: z.optional(z.strictObject({ path: nonEmptyText(4096) })),
});
export const messageSendResultSchema = z.strictObject({ queued: z.literal(true) });

export const taskScheduleParamsSchema = z.strictObject({
  prompt: nonEmptyText(LIMITS.prompt),
  schedule: taskScheduleSchema,
  /** A group id; omitted = the run's own group. */
  group: z.optional(groupIdSchema),
});
export const taskScheduleResultSchema = z.strictObject({ taskId: taskIdSchema });

export const taskListParamsSchema = z.strictObject({ group: z.optional(groupIdSchema) });
export const taskListResultSchema = z.strictObject({
  tasks: z.array(taskSummarySchema).check(z.maxLength(LIMITS.tasks)),
});

export const taskUpdateParamsSchema = z
  .strictObject({
    taskId: taskIdSchema,
    prompt: z.optional(nonEmptyText(LIMITS.prompt)),
    schedule: z.optional(taskScheduleSchema),
  })
  .check(
    z.refine((p) => p.prompt !== undefined || p.schedule !== undefined, {
      message: 'give a new prompt, a new schedule, or both',
    }),
  );

export const groupListParamsSchema = z.strictObject({});
export const groupListResultSchema = z.strictObject({
  groups: z.array(groupSummarySchema).check(z.maxLength(LIMITS.groups)),
});

export const groupRegisterParamsSchema = z.strictObject({
  id: groupIdSchema,
  channel: channelSchema,
  chatId: nonEmptyText(LIMITS.name),
  name: nonEmptyText(LIMITS.name),
});

export const bashCheckParamsSchema = z.strictObject({
  command: nonEmptyText(LIMITS.command),
  /** Why the in-container classifier did not run it locally (informational; the host classifies itself). */
  localReason: boundedText(LIMITS.reason),
});
export const bashCheckResultSchema = z.strictObject({
  decision: z.enum(['allow', 'deny']),
  reason: boundedText(LIMITS.reason),
});

/**
 * Sent before each command the agent runs, however it was decided: the host classifies it again, audits
 * it, and stops the run when it ran locally although the host's gate escalates it (a gate miss), or ran
 * "by the host's leave" without one. `via` and `reason` are the container's claims, never trusted.
 */
export const bashRanParamsSchema = z.strictObject({
  command: nonEmptyText(LIMITS.command),
  via: z.enum(['local', 'host']),
  reason: boundedText(LIMITS.reason),
});

/**
 * Sent before a file tool reads (`read_file`, `grep`, `edit_file`, `read_attachment`), with the real path it
 * is about to read (symlinks resolved). The host decides from its own mount plan whether the path lies in a
 * mount that held secrets, and taints the run; a document read with `read_attachment` corrupts it (its
 * text is nobody's own words). Nothing here says whether either applies. A report that cannot be sent
 * blocks the read.
 */
export const fileReadParamsSchema = z.strictObject({
  path: nonEmptyText(4096),
  tool: z.enum(['read_file', 'grep', 'edit_file', 'read_attachment']),
});

/**
 * Sent after `read_attachment` extracted a document's text, with the real path it read (as `file.read` had
 * it) and the text, unfenced: the host keeps it for the group's memory search, tied to the message that
 * carried the file. The text is this run's report, so the host keeps it with the run's taint and always
 * recalls it fenced.
 */
export const documentTextParamsSchema = z.strictObject({
  path: nonEmptyText(4096),
  text: boundedText(LIMITS.documentText),
});

export const serviceCallParamsSchema = z.strictObject({
  service: serviceNameSchema,
  /** For an MCP service: which of its tools; `params` are then the tool's arguments. */
  tool: z.optional(toolNameSchema),
  params: z.unknown(),
});
export const serviceCallResultSchema = z.strictObject({ result: z.unknown() });

/** sha256 of config.toml's bytes, as `config.read` returned it. */
export const configHashSchema = z
  .string()
  .check(z.regex(/^[0-9a-f]{64}$/, 'a config hash is the 64 hex digits config.read returned'));

export const configReadParamsSchema = z.strictObject({});
export const configReadResultSchema = z.strictObject({
  /** config.toml with anything that looks like a secret replaced by [REDACTED]. */
  text: boundedText(LIMITS.configText),
  hash: configHashSchema,
});

/** A TOML-representable value (no null: a patch cannot delete a key), bounded by its JSON size. */
const configValueSchema = z.json().check(
  z.refine((v) => JSON.stringify(v).length <= LIMITS.configPatch, {
    message: `a value may be at most ${LIMITS.configPatch} characters as JSON`,
  }),
);

export const configProposeParamsSchema = z.strictObject({
  /** The hash of the version the change is based on: a file changed since is refused, never merged. */
  baseHash: configHashSchema,
  changes: z
    .array(
      z.strictObject({
        /** A dotted key path such as `assistant.name` or `groups.family.trigger`. */
        key: nonEmptyText(LIMITS.name),
        value: configValueSchema,
      }),
    )
    .check(z.minLength(1), z.maxLength(LIMITS.configChanges)),
  reason: nonEmptyText(LIMITS.reason),
});
export const configProposeResultSchema = z.strictObject({
  /**
   * applied: written and handed to the running host; refused: the host's checks said no before anyone
   * was asked (invalid, protected, stale); denied: the owner did not approve (or did not answer).
   */
  status: z.enum(['applied', 'refused', 'denied']),
  detail: boundedText(LIMITS.configDetail),
});

/**
 * Searches the run's own group's memory (its messages and notes); never another group's. What the host
 * returns keeps its author: a hit whose words are not the owner's is fenced and taints the run.
 */
export const memorySearchParamsSchema = z.strictObject({
  query: nonEmptyText(LIMITS.memoryQuery),
  since: z.optional(isoTimestampSchema),
  until: z.optional(isoTimestampSchema),
  /** A sender id or display name. */
  sender: z.optional(nonEmptyText(LIMITS.name)),
  limit: z.optional(intBetween(1, LIMITS.memoryHits)),
});
export const memoryHitSchema = z.strictObject({
  kind: z.enum(['message', 'note', 'document']),
  /**
   * `message:<id>` or `note:<id>`; a note's id is what `memory.forget` takes. A document's text (what a
   * run read from a file a message carried) has its message's ref.
   */
  ref: nonEmptyText(64),
  /** Who wrote it, in the host's words ("the owner", "Sam (sender 4412)", "the assistant, run 12"). */
  author: boundedText(LIMITS.name * 2),
  /** Where and how it came in ("a message in this group's chat", "a note in memory/2026-01-01-…md"). */
  origin: boundedText(LIMITS.name * 2),
  at: isoTimestampSchema,
  /** Fenced as untrusted text unless the owner wrote it. */
  text: boundedText(LIMITS.memoryHitText),
});
export const memorySearchResultSchema = z.strictObject({
  hits: z.array(memoryHitSchema).check(z.maxLength(LIMITS.memoryHits)),
});
export const memoryRememberParamsSchema = z.strictObject({ text: nonEmptyText(LIMITS.memoryNote) });
export const memoryRememberResultSchema = z.strictObject({ ref: nonEmptyText(64), path: nonEmptyText(512) });
export const memoryForgetParamsSchema = z.strictObject({
  ref: z.string().check(z.regex(/^note:\d{1,15}$/, 'give the ref of a note, as memory_search returned it')),
});

/**
 * The reply as the model has written it so far (the whole text, not a delta), sent while it streams. A
 * notification: the host may show it in the run's own chat, by editing one message, only after the same
 * outbound checks a message passes; it drops drafts beyond its edit rate and never answers. Nothing here
 * names a chat: a draft only ever goes to the run's own.
 */
export const runDraftParamsSchema = z.strictObject({ text: boundedText(LIMITS.draftText) });

export const runDoneParamsSchema = z.strictObject({
  status: z.enum(['ok', 'error']),
  error: z.optional(boundedText(LIMITS.error)),
  usage: z.optional(runUsageSchema),
});

// ---------------------------------------------------------------------------------------------
// Method tables

export interface MethodSpec {
  params: z.ZodMiniType;
  /** For notifications the result is never sent; `z.void()` by convention. */
  result: z.ZodMiniType;
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
  'document.text': { params: documentTextParamsSchema, result: z.void(), notification: true },
  'service.call': { params: serviceCallParamsSchema, result: serviceCallResultSchema },
  'config.read': { params: configReadParamsSchema, result: configReadResultSchema },
  'config.propose': { params: configProposeParamsSchema, result: configProposeResultSchema },
  'memory.search': { params: memorySearchParamsSchema, result: memorySearchResultSchema },
  'memory.remember': { params: memoryRememberParamsSchema, result: memoryRememberResultSchema },
  'memory.forget': { params: memoryForgetParamsSchema, result: okResult },
  'run.draft': { params: runDraftParamsSchema, result: z.void(), notification: true },
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

/** What a caller passes (before parsing). */
export type ParamsIn<T extends MethodTable, M extends keyof T> = z.input<T[M]['params']>;
/** What a handler receives (after parsing). */
export type ParamsOut<T extends MethodTable, M extends keyof T> = z.output<T[M]['params']>;
/** What a handler returns (before validation). */
export type ResultIn<T extends MethodTable, M extends keyof T> = z.input<T[M]['result']>;
/** What a caller receives (after validation). */
export type ResultOut<T extends MethodTable, M extends keyof T> = z.output<T[M]['result']>;
