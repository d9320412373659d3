/**
 * The conversation as the agent stores it and feeds it to the model (the system prompt is never part
 * of it: it is rebuilt for every run).
 */
import * as z from 'zod';

export const toolCallSchema = z
  .object({
    id: z.string().min(1).max(256),
    name: z.string().min(1).max(128),
    /** The JSON text the model produced, kept verbatim. */
    arguments: z.string(),
  })
  .strict();
export type ToolCall = z.infer<typeof toolCallSchema>;

export const conversationMessageSchema = z.discriminatedUnion('role', [
  z
    .object({
      role: z.literal('user'),
      content: z.string(),
      /** Host row ids of the chat messages this turn carries; used to skip messages already taken in. */
      chatIds: z.array(z.number().int()).optional(),
      /** Written by the agent itself (e.g. a compaction note), not by a chat participant. */
      note: z.boolean().optional(),
      /** Photos of these messages the model is shown as image parts (paths in the group folder, not bytes). */
      images: z
        .array(z.object({ path: z.string().min(1).max(512), mime: z.string().min(1).max(64) }).strict())
        .max(16)
        .optional(),
    })
    .strict(),
  z
    .object({
      role: z.literal('assistant'),
      content: z.string().nullable(),
      toolCalls: z.array(toolCallSchema).optional(),
    })
    .strict(),
  z
    .object({
      role: z.literal('tool'),
      toolCallId: z.string().min(1).max(256),
      content: z.string(),
    })
    .strict(),
]);
export type ConversationMessage = z.infer<typeof conversationMessageSchema>;
export type UserMessage = Extract<ConversationMessage, { role: 'user' }>;
export type ToolMessage = Extract<ConversationMessage, { role: 'tool' }>;

export const MISSING_TOOL_RESULT = '(no result was recorded for this tool call)';

/**
 * Makes tool calls and results pair up, as chat APIs require: every assistant tool call is followed by
 * exactly one result for it, and no tool result stands without its call. Missing results get a
 * placeholder, orphaned or duplicate results are dropped.
 */
export function sanitizeConversation(messages: readonly ConversationMessage[]): ConversationMessage[] {
  const out: ConversationMessage[] = [];
  let i = 0;
  while (i < messages.length) {
    const message = messages[i] as ConversationMessage;
    i++;
    if (message.role === 'tool') continue; // not directly after its call: an orphan
    if (message.role !== 'assistant' || !message.toolCalls || message.toolCalls.length === 0) {
      out.push(message.role === 'assistant' ? { role: 'assistant', content: message.content } : message);
      continue;
    }
    const calls = dedupeCalls(message.toolCalls);
    out.push({ role: 'assistant', content: message.content, toolCalls: calls });
    const results = new Map<string, ToolMessage>();
    while (i < messages.length && (messages[i] as ConversationMessage).role === 'tool') {
      const result = messages[i] as ToolMessage;
      i++;
      if (calls.some((c) => c.id === result.toolCallId) && !results.has(result.toolCallId)) {
        results.set(result.toolCallId, result);
      }
    }
    for (const call of calls) {
      out.push(results.get(call.id) ?? { role: 'tool', toolCallId: call.id, content: MISSING_TOOL_RESULT });
    }
  }
  return out;
}

function dedupeCalls(calls: readonly ToolCall[]): ToolCall[] {
  const seen = new Set<string>();
  return calls.filter((call) => (seen.has(call.id) ? false : (seen.add(call.id), true)));
}

/** The highest host message id the conversation has taken in (0 if none). */
export function maxChatId(messages: readonly ConversationMessage[]): number {
  let max = 0;
  for (const message of messages) {
    if (message.role !== 'user' || !message.chatIds) continue;
    for (const id of message.chatIds) if (id > max) max = id;
  }
  return max;
}
