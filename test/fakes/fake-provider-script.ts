import type { IncomingHttpHeaders } from 'node:http';

/** Which protocol a recorded request spoke. */
export type FakeApi = 'chat' | 'responses' | 'messages' | 'models' | 'transcriptions' | 'unknown';

export interface FakeRequest {
  /** 0-based position in `fake.requests`. */
  index: number;
  method: string;
  path: string;
  query: string;
  api: FakeApi;
  /** Every header as received, including authorization / x-api-key. */
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** Parsed JSON body, or undefined when empty or not JSON. */
  body: unknown;
  /** performance.now() when the request arrived. */
  receivedAt: number;
  /** The client closed the connection before the fake finished answering. */
  aborted: boolean;
  /** performance.now() when the abort was seen. */
  abortedAt: number | undefined;
  /** The fake wrote its whole answer. */
  completed: boolean;
}

export interface FakeUsage {
  promptTokens: number;
  completionTokens: number;
  /** OpenRouter's `usage.cost` (USD) in chat completions, when set. */
  costUsd?: number;
}

export interface ToolCallSpec {
  id?: string;
  name: string;
  /** A JSON string as the model would emit it, or an object that is serialized. */
  arguments: string | Record<string, unknown>;
}

interface StreamShaping {
  /** Wait this long before each content chunk when streaming. */
  chunkDelayMs?: number;
  /** Only the response headers go out until this settles (a model that is slow to start). */
  holdBody?: Promise<unknown>;
  /** After this many content chunks, wait for `resume` before sending the rest. */
  pauseAfterChunks?: number;
  resume?: Promise<unknown>;
  /**
   * An upstream failure mid-stream: after `afterChunks` content chunks, once `when` settles, the connection
   * is closed with the written frames flushed. `when` is how the test says it has read those chunks: a
   * fetch body is a WHATWG stream, whose error discards chunks still queued, so a close that reaches the
   * client together with the last chunk loses it (Node 24.22 delivers both in one tick).
   */
  drop?: { afterChunks: number; when: Promise<unknown> };
}

interface ReplyCommon extends StreamShaping {
  /** Overrides the deterministic usage numbers. */
  usage?: Partial<FakeUsage>;
  /** Overrides the model echoed back (default: the request's model). */
  model?: string;
  /** Extra response headers. */
  headers?: Record<string, string>;
}

export interface TextReply extends ReplyCommon {
  kind: 'text';
  text: string;
  /** Exact stream pieces; default: split by `chunkSize` characters, else by words. */
  chunks?: string[];
  chunkSize?: number;
  finishReason?: string;
}

export interface ToolCallsReply extends ReplyCommon {
  kind: 'tool_calls';
  calls: ToolCallSpec[];
  /** Optional text before the calls. */
  text?: string;
}

export interface ErrorReply {
  kind: 'error';
  status: number;
  /** JSON-serialized unless a string; default: an error body in the request's API style. */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface HangReply {
  /** Never answers; the request stays open until the client aborts or the fake closes. */
  kind: 'hang';
}

export type ScriptedResponse = TextReply | ToolCallsReply | ErrorReply | HangReply;

export type Responder = (request: FakeRequest) => ScriptedResponse | Promise<ScriptedResponse>;

/** Builders for scripted responses, e.g. `fake.script(reply.error(500), reply.text('ok'))`. */
export const reply = {
  text: (text: string, options: Omit<TextReply, 'kind' | 'text'> = {}): TextReply => ({
    kind: 'text',
    text,
    ...options,
  }),
  toolCalls: (
    calls: ToolCallSpec[],
    options: Omit<ToolCallsReply, 'kind' | 'calls'> = {},
  ): ToolCallsReply => ({
    kind: 'tool_calls',
    calls,
    ...options,
  }),
  error: (status: number, options: Omit<ErrorReply, 'kind' | 'status'> = {}): ErrorReply => ({
    kind: 'error',
    status,
    ...options,
  }),
  hang: (): HangReply => ({ kind: 'hang' }),
};

/** The fake's token count: one token per 4 characters, rounded up. Deterministic so tests can predict it. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The text that prompt_tokens is computed from: the JSON of `messages` (chat, messages API, plus `system`)
 * or `input` (responses API).
 */
export function promptTextOf(body: unknown): string {
  if (!isRecord(body)) return '';
  const parts: unknown[] = [];
  if (body.system !== undefined) parts.push(body.system);
  if (body.messages !== undefined) parts.push(body.messages);
  if (body.input !== undefined) parts.push(body.input);
  return parts.map((part) => JSON.stringify(part)).join('');
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : ''))
    .filter((text) => text.length > 0)
    .join('\n');
}

/** The text of the last user message in any of the three request shapes. */
export function lastUserText(body: unknown): string {
  if (!isRecord(body)) return '';
  if (typeof body.input === 'string') return body.input;
  const list = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : [];
  for (let i = list.length - 1; i >= 0; i--) {
    const message: unknown = list[i];
    if (isRecord(message) && message.role === 'user') return contentText(message.content);
  }
  return '';
}

/** Default behaviour when nothing is scripted: reply "echo: <last user message>". */
export const echoResponder: Responder = (request) => reply.text(`echo: ${lastUserText(request.body)}`);
