/**
 * Keeps the stored conversation under a token budget. Old tool outputs are shortened first; then whole
 * turns (a user message and everything up to the next one) are dropped from the oldest, so a tool call
 * and its result are always kept or dropped together. The latest turn is always kept.
 */
import { sanitizeConversation, type ConversationMessage, type UserMessage } from './conversation.ts';

export const CHARS_PER_TOKEN = 4;
/** Per-message overhead of the chat format, in tokens. */
const MESSAGE_OVERHEAD_TOKENS = 4;
/** Tool outputs of earlier turns are cut to this many characters before turns are dropped. */
export const OLD_TOOL_OUTPUT_CHARS = 2000;
/** After compacting, the conversation fills at most this share of the budget, so it is not compacted every run. */
const TARGET_SHARE = 0.75;

export function estimateTokens(messages: readonly ConversationMessage[]): number {
  let chars = 0;
  for (const message of messages) {
    chars += message.content?.length ?? 0;
    if (message.role === 'assistant') {
      for (const call of message.toolCalls ?? [])
        chars += call.name.length + call.arguments.length + call.id.length;
    }
  }
  return Math.ceil(chars / CHARS_PER_TOKEN) + messages.length * MESSAGE_OVERHEAD_TOKENS;
}

export interface CompactionResult {
  messages: ConversationMessage[];
  /** Messages removed (not counting shortened ones). */
  dropped: number;
  /** Tool outputs shortened. */
  shortened: number;
}

export function compactConversation(
  messages: readonly ConversationMessage[],
  budgetTokens: number,
): CompactionResult {
  let current = sanitizeConversation(messages);
  if (estimateTokens(current) <= budgetTokens) return { messages: current, dropped: 0, shortened: 0 };
  const target = Math.floor(budgetTokens * TARGET_SHARE);

  const turns = splitTurns(current);
  const last = turns.length - 1;
  let shortened = 0;
  const shrunk = turns.map((turn, index) =>
    index === last
      ? turn
      : turn.map((message) => {
          if (message.role !== 'tool' || message.content.length <= OLD_TOOL_OUTPUT_CHARS) return message;
          shortened++;
          return { ...message, content: shortenToolOutput(message.content) };
        }),
  );
  current = shrunk.flat();
  if (estimateTokens(current) <= target) return { messages: current, dropped: 0, shortened };

  let keepFrom = 0;
  let total = estimateTokens(current);
  const noteAllowance = 40;
  while (keepFrom < last && total + noteAllowance > target) {
    total -= estimateTokens(shrunk[keepFrom] as ConversationMessage[]);
    keepFrom++;
  }
  if (keepFrom === 0) return { messages: current, dropped: 0, shortened };
  const droppedTurns = shrunk.slice(0, keepFrom).flat();
  const droppedChatIds = droppedTurns.flatMap((m) => (m.role === 'user' ? (m.chatIds ?? []) : []));
  const note: UserMessage = {
    role: 'user',
    note: true,
    content: '[Note from the agent: older parts of this conversation were removed to save space.]',
  };
  // The note remembers the highest message id taken in, so retried messages are still recognised.
  if (droppedChatIds.length > 0) note.chatIds = [Math.max(...droppedChatIds)];
  return { messages: [note, ...shrunk.slice(keepFrom).flat()], dropped: droppedTurns.length, shortened };
}

/** Each turn starts at a user message; anything before the first one forms a turn of its own. */
export function splitTurns(messages: readonly ConversationMessage[]): ConversationMessage[][] {
  const turns: ConversationMessage[][] = [];
  for (const message of messages) {
    const currentTurn = turns[turns.length - 1];
    if (message.role === 'user' || !currentTurn) turns.push([message]);
    else currentTurn.push(message);
  }
  return turns;
}

function shortenToolOutput(content: string): string {
  const keep = OLD_TOOL_OUTPUT_CHARS - 100;
  return `${content.slice(0, keep)}\n[… ${content.length - keep} more characters removed from this old tool output]`;
}
