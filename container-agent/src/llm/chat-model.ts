/**
 * What the agent loop needs from a language model: one chat completion with tools. The loop depends on
 * this interface only; openai-chat-model.ts implements it against the host's gateway.
 */
import type { ConversationMessage, ToolCall } from '../history/conversation.ts';

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

export type ModelMessage = { role: 'system'; content: string } | ConversationMessage;

export interface CompletionRequest {
  model: string;
  messages: readonly ModelMessage[];
  tools: readonly ToolSpec[];
  /** 'none' asks for a final answer without tool calls. */
  toolChoice: 'auto' | 'none';
  maxOutputTokens: number;
  signal: AbortSignal;
  /**
   * The answer's text so far (the whole text, not a delta), while the model writes it. Given only when the
   * host takes drafts; never called for a turn once it asks for a tool (its text is not the answer).
   */
  onDraft?: (text: string) => void;
}

export interface CompletionResponse {
  content: string | null;
  toolCalls: ToolCall[];
  /** As reported by the provider: stop, tool_calls, length, content_filter, … */
  finishReason: string;
  usage: { promptTokens: number; completionTokens: number };
}

export interface ChatModel {
  complete(request: CompletionRequest): Promise<CompletionResponse>;
}
