import { z } from 'zod';

/** Wire format of the local console API (HTTP over the host's Unix socket). Both sides validate it. */

export const postMessageBody = z
  .object({
    group: z.string().min(1).max(64),
    text: z
      .string()
      .min(1, 'the message is empty')
      .max(32_000, 'the message is longer than 32000 characters'),
    /** Chosen by the client so that re-sending after a dropped connection cannot store the message twice. */
    clientMessageId: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/),
  })
  .strict();
export type PostMessageBody = z.infer<typeof postMessageBody>;

export const postMessageResult = z.object({
  groupId: z.string(),
  messageId: z.number().int().nullable(),
  triggered: z.boolean(),
  duplicate: z.boolean(),
  /** Outbox id before this message; replies to it come after. */
  after: z.number().int(),
  /** The message was an owner command; the host's answer is delivered under this key. */
  commandReplyKey: z.string().nullable(),
});
export type PostMessageResult = z.infer<typeof postMessageResult>;

export const replyEvent = z.object({
  type: z.literal('reply'),
  outboxId: z.number().int(),
  key: z.string(),
  text: z.string(),
});
export const stateEvent = z.object({
  type: z.literal('state'),
  groupId: z.string(),
  cursor: z.number().int(),
  pendingOutbox: z.number().int(),
  busy: z.boolean(),
  /** Newest outbox id of the chat when this state was sent; a client resumes after it. */
  lastOutboxId: z.number().int(),
});
export const consoleEvent = z.discriminatedUnion('type', [replyEvent, stateEvent]);
export type ConsoleEvent = z.infer<typeof consoleEvent>;

export const apiError = z.object({ error: z.string() });

export const hostStatus = z.object({
  pid: z.number().int(),
  startedAt: z.string(),
  assistant: z.string(),
  queue: z.object({
    active: z.array(z.object({ groupId: z.string(), runId: z.number().int() })),
    waiting: z.array(z.string()),
    retrying: z.array(z.object({ groupId: z.string(), attempt: z.number().int() })),
  }),
  outboxPending: z.number().int(),
  approvalsPending: z.number().int(),
  groups: z.array(
    z.object({
      id: z.string(),
      channel: z.string(),
      admin: z.boolean(),
      cursor: z.number().int(),
      openTasks: z.number().int(),
    }),
  ),
});
export type HostStatus = z.infer<typeof hostStatus>;
