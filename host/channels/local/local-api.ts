import crypto from 'node:crypto';
// zod's mini build: the same validation in a form a bundler can trim, because `carapace send` loads this
// file and starts in well under a quarter second only without the whole of zod (see scripts/build.ts).
import * as z from 'zod/mini';

/** Wire format of the local console API (HTTP over the host's Unix socket). Both sides validate it. */

export const postMessageBody = z.strictObject({
  group: z.string().check(z.minLength(1), z.maxLength(64)),
  text: z
    .string()
    .check(
      z.minLength(1, 'the message is empty'),
      z.maxLength(32_000, 'the message is longer than 32000 characters'),
    ),
  /** Chosen by the client so that re-sending after a dropped connection cannot store the message twice. */
  clientMessageId: z.string().check(z.regex(/^[A-Za-z0-9_-]{8,64}$/)),
});
export type PostMessageBody = z.infer<typeof postMessageBody>;

export const postMessageResult = z.object({
  groupId: z.string(),
  messageId: z.nullable(z.int()),
  triggered: z.boolean(),
  duplicate: z.boolean(),
  /** Outbox id before this message; replies to it come after. */
  after: z.int(),
  /** The message was an owner command; the host's answer is delivered under this key. */
  commandReplyKey: z.nullable(z.string()),
});
export type PostMessageResult = z.infer<typeof postMessageResult>;

export const replyEvent = z.object({
  type: z.literal('reply'),
  outboxId: z.int(),
  key: z.string(),
  text: z.string(),
});
export const stateEvent = z.object({
  type: z.literal('state'),
  groupId: z.string(),
  cursor: z.int(),
  pendingOutbox: z.int(),
  busy: z.boolean(),
  /** Newest outbox id of the chat when this state was sent; a client resumes after it. */
  lastOutboxId: z.int(),
  /**
   * The group's latest messages refused at its daily spend cap (ids after `after`, through `through`), with
   * the cap and the setting that raises it: the group's own line says so once a day, this at every refusal.
   */
  capRefusal: z.optional(z.object({ after: z.int(), through: z.int(), reason: z.string() })),
});
export const consoleEvent = z.discriminatedUnion('type', [replyEvent, stateEvent]);
export type ConsoleEvent = z.infer<typeof consoleEvent>;

/** Pre-started containers: the budget and what waits now (memory as measured, null until measured). */
export const prestartStatus = z.object({
  count: z.int(),
  memoryMb: z.number(),
  idleMs: z.int(),
  containers: z.array(z.object({ groupId: z.string(), memoryMb: z.nullable(z.number()) })),
});
export type PrestartStatus = z.infer<typeof prestartStatus>;

/** `POST /v1/config/reload`: the running host read config.toml again; what came of it. */
export const configReloadResult = z.object({
  kind: z.enum(['unchanged', 'applied', 'refused', 'rolled-back']),
  ok: z.boolean(),
  /** Lines for a person (what applied, what waits for a restart, or why not). */
  detail: z.string(),
});
export type ConfigReloadResult = z.infer<typeof configReloadResult>;

export const hostStatus = z.object({
  pid: z.int(),
  startedAt: z.string(),
  assistant: z.string(),
  queue: z.object({
    active: z.array(z.object({ groupId: z.string(), runId: z.int() })),
    waiting: z.array(z.string()),
    retrying: z.array(z.object({ groupId: z.string(), attempt: z.int() })),
  }),
  outboxPending: z.int(),
  /** Pieces dead-lettered (chat gone, no such channel); `carapace doctor` lists them. */
  outboxDead: z._default(z.int(), 0),
  /** Pending pieces that failed at least once, oldest first: which one is failing, and why. */
  outboxFailing: z._default(
    z.array(
      z.object({
        id: z.int(),
        groupId: z.nullable(z.string()),
        channel: z.string(),
        chatId: z.string(),
        /** The reply's opening words. */
        begins: z.string(),
        attempts: z.int(),
        connectionDrops: z.int(),
        lastError: z.nullable(z.string()),
      }),
    ),
    [],
  ),
  approvalsPending: z.int(),
  /** Where the host runs its agents' turns (absent from hosts older than `[runner]`). */
  runner: z.optional(z.string()),
  /** The database file and its WAL in bytes, and rows per table that grows with history (an id span). */
  database: z.optional(
    z.object({
      bytes: z.int(),
      walBytes: z.int(),
      rows: z.object({
        messages: z.int(),
        runs: z.int(),
        outbox: z.int(),
        audit: z.int(),
        usage: z.int(),
      }),
    }),
  ),
  channels: z._default(
    z.array(
      z.object({
        name: z.string(),
        state: z.enum(['connected', 'connecting', 'needs-login', 'logged-out', 'stopped']),
        reason: z.optional(z.string()),
        since: z.string(),
        adminChat: z.optional(z.string()),
      }),
    ),
    [],
  ),
  /** Absent when the host runs no containers (no provider or no Docker: runs are answered with notices). */
  prestart: z.optional(prestartStatus),
  /** The MCP servers declared in `[services]` (mcp-connection.ts McpServerStatus). */
  services: z.optional(
    z.array(
      z.object({
        name: z.string(),
        type: z.enum(['stdio', 'docker', 'http']),
        state: z.enum(['stopped', 'starting', 'ready', 'restarting', 'broken']),
        tools: z.nullable(z.int()),
        lastError: z.nullable(z.string()),
        restarts: z.int(),
        pid: z.nullable(z.int()),
        container: z.optional(z.nullable(z.string())),
      }),
    ),
  ),
  /** The credentials declared in `[credentials]` (credential-status.ts CredentialStatus): never a value. */
  credentials: z.optional(
    z.array(
      z.object({
        name: z.string(),
        kind: z.enum(['http', 'git']),
        upstream: z.string(),
        value: z.enum(['set', 'missing']),
        groups: z.array(z.string()),
        last: z.nullable(z.object({ at: z.string(), status: z.int() })),
      }),
    ),
  ),
  groups: z.array(
    z.object({
      id: z.string(),
      channel: z.string(),
      admin: z.boolean(),
      cursor: z.int(),
      openTasks: z.int(),
    }),
  ),
});
export type HostStatus = z.infer<typeof hostStatus>;

/** A fresh id for a console message; random so two clients never collide. */
export function newClientMessageId(): string {
  return crypto.randomBytes(12).toString('base64url');
}

/** `POST /v1/web/login`: a one-time sign-in link to the web console. */
export const webLoginLink = z.object({ url: z.string(), expiresAt: z.string() });
export type WebLoginLink = z.infer<typeof webLoginLink>;
