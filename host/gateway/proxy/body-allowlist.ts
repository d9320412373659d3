/**
 * What a container may ask the provider to do, per route: an allowlist of request fields, not a deny
 * list. Providers keep adding fields that make them act or keep data on their side: OpenRouter's
 * `plugins` (web search) and `models` (fallback routing past the model allowlist), `store` and
 * `metadata` (content kept in the owner's provider account), server-side tools (web search, MCP, code
 * interpreter, computer use), URLs the provider would fetch. A field the gateway does not know is
 * refused, so a new provider feature stays off until someone decides it is safe.
 *
 * The lists hold what the agent sends plus the plain sampling settings each API documents.
 */
import { z } from 'zod';
import { zodKeyPath } from '../../../container-agent/src/rpc/zod-issues.ts';

export type BodyKind = 'chat' | 'responses' | 'messages';

/** The request field that bounds the output of one call, per API. */
export const OUTPUT_TOKEN_FIELDS: Readonly<Record<BodyKind, readonly string[]>> = {
  chat: ['max_completion_tokens', 'max_tokens'],
  responses: ['max_output_tokens'],
  messages: ['max_tokens'],
};

const tokenCount = z.number().int().positive();
const unitNumber = z.number().nullable().optional();
const stop = z
  .union([z.string(), z.array(z.string()).max(16)])
  .nullable()
  .optional();
const jsonObject = z.record(z.string(), z.unknown());

/** A plain function the agent runs itself (OpenAI chat completions shape). */
const chatFunctionTool = z.strictObject({
  type: z.literal('function'),
  function: z.strictObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: jsonObject.optional(),
    strict: z.boolean().nullable().optional(),
  }),
});

/** The responses API puts the function fields at the top level. */
const responsesFunctionTool = z.strictObject({
  type: z.literal('function'),
  name: z.string().min(1),
  description: z.string().nullable().optional(),
  parameters: jsonObject.nullable().optional(),
  strict: z.boolean().nullable().optional(),
});

/** Anthropic client tools carry no type, or `custom`; provider-run tools always name theirs. */
const anthropicClientTool = z.strictObject({
  type: z.literal('custom').optional(),
  name: z.string().min(1),
  description: z.string().optional(),
  input_schema: jsonObject,
  cache_control: jsonObject.nullable().optional(),
});

const namedFunctionChoice = z.strictObject({
  type: z.literal('function'),
  function: z.strictObject({ name: z.string().min(1) }),
});

// Content is text, and in a user message images sent inline: an image or file part that holds a URL
// would have the provider fetch it on the model's behalf, so only `data:` URLs of common image types pass.
const textPart = z.strictObject({ type: z.literal('text'), text: z.string() });
const chatContent = z
  .union([z.string(), z.array(textPart)])
  .nullable()
  .optional();

/** The longest inline image one part may carry (base64 characters); the request's own size limit binds too. */
export const MAX_IMAGE_URL_CHARS = 8 * 1024 * 1024;
/** An inline image: a data URL, never a link the provider would follow. */
export const IMAGE_DATA_URL = /^data:image\/(?:png|jpeg|webp|gif);base64,[A-Za-z0-9+/]+={0,2}$/;
const imagePart = z.strictObject({
  type: z.literal('image_url'),
  image_url: z.strictObject({
    url: z
      .string()
      .max(MAX_IMAGE_URL_CHARS, 'an image part is larger than the gateway takes')
      .regex(IMAGE_DATA_URL, 'an image part must be a data: URL of a PNG, JPEG, WebP or GIF image'),
    detail: z.enum(['auto', 'low', 'high']).optional(),
  }),
});
const userContent = z.union([z.string(), z.array(z.union([textPart, imagePart]))]);

const chatMessage = z.discriminatedUnion('role', [
  z.strictObject({ role: z.literal('system'), content: chatContent, name: z.string().optional() }),
  z.strictObject({ role: z.literal('developer'), content: chatContent, name: z.string().optional() }),
  z.strictObject({ role: z.literal('user'), content: userContent, name: z.string().optional() }),
  z.strictObject({
    role: z.literal('assistant'),
    content: chatContent,
    name: z.string().optional(),
    tool_calls: z
      .array(
        z.strictObject({
          id: z.string(),
          type: z.literal('function'),
          function: z.strictObject({ name: z.string(), arguments: z.string() }),
        }),
      )
      .optional(),
    refusal: z.string().nullable().optional(),
  }),
  z.strictObject({ role: z.literal('tool'), tool_call_id: z.string(), content: chatContent }),
]);

const chatBody = z.strictObject({
  model: z.string().min(1, 'model must not be empty').optional(),
  messages: z.array(chatMessage).min(1, 'messages must not be empty'),
  stream: z.boolean().optional(),
  stream_options: z.strictObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  max_tokens: tokenCount.optional(),
  max_completion_tokens: tokenCount.optional(),
  n: z.literal(1, 'n must be 1: the gateway bounds spend per answer').nullable().optional(),
  temperature: unitNumber,
  top_p: unitNumber,
  frequency_penalty: unitNumber,
  presence_penalty: unitNumber,
  seed: z.number().int().nullable().optional(),
  stop,
  tools: z.array(chatFunctionTool).optional(),
  tool_choice: z.union([z.enum(['none', 'auto', 'required']), namedFunctionChoice]).optional(),
  parallel_tool_calls: z.boolean().optional(),
  response_format: z.looseObject({ type: z.enum(['text', 'json_object', 'json_schema']) }).optional(),
  reasoning_effort: z.enum(['minimal', 'low', 'medium', 'high']).nullable().optional(),
});

const responsesTextPart = z.strictObject({
  type: z.enum(['input_text', 'output_text']),
  text: z.string(),
  annotations: z.array(z.unknown()).max(0).optional(),
});
const responsesInputItem = z.union([
  z.strictObject({
    type: z.literal('message').optional(),
    role: z.enum(['user', 'assistant', 'system', 'developer']),
    content: z.union([z.string(), z.array(responsesTextPart)]),
    id: z.string().optional(),
    status: z.string().optional(),
  }),
  z.strictObject({
    type: z.literal('function_call'),
    call_id: z.string(),
    name: z.string(),
    arguments: z.string(),
    id: z.string().optional(),
    status: z.string().optional(),
  }),
  z.strictObject({
    type: z.literal('function_call_output'),
    call_id: z.string(),
    output: z.string(),
    id: z.string().optional(),
    status: z.string().optional(),
  }),
]);

const responsesBody = z.strictObject({
  model: z.string().min(1, 'model must not be empty').optional(),
  input: z.union([z.string(), z.array(responsesInputItem)]),
  instructions: z.string().nullable().optional(),
  stream: z.boolean().optional(),
  max_output_tokens: tokenCount.optional(),
  temperature: unitNumber,
  top_p: unitNumber,
  tools: z.array(responsesFunctionTool).optional(),
  tool_choice: z
    .union([
      z.enum(['none', 'auto', 'required']),
      z.strictObject({ type: z.literal('function'), name: z.string() }),
    ])
    .optional(),
  parallel_tool_calls: z.boolean().optional(),
  // The responses API stores every exchange unless told not to; the gateway always tells it not to.
  store: z.literal(false, 'store must be false: conversations are not kept at the provider').optional(),
  text: z.looseObject({ format: z.looseObject({ type: z.string() }).optional() }).optional(),
  reasoning: z.strictObject({ effort: z.string().nullable().optional() }).nullable().optional(),
  truncation: z.enum(['auto', 'disabled']).nullable().optional(),
});

const anthropicBlock = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text'), text: z.string(), cache_control: jsonObject.optional() }),
  z.strictObject({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.unknown() }),
  z.strictObject({
    type: z.literal('tool_result'),
    tool_use_id: z.string(),
    content: z.union([z.string(), z.array(textPart)]).optional(),
    is_error: z.boolean().optional(),
    cache_control: jsonObject.optional(),
  }),
  z.strictObject({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }),
  z.strictObject({ type: z.literal('redacted_thinking'), data: z.string() }),
]);

const messagesBody = z.strictObject({
  model: z.string().min(1, 'model must not be empty').optional(),
  messages: z
    .array(
      z.strictObject({
        role: z.enum(['user', 'assistant']),
        content: z.union([z.string(), z.array(anthropicBlock)]),
      }),
    )
    .min(1, 'messages must not be empty'),
  system: z.union([z.string(), z.array(anthropicBlock)]).optional(),
  max_tokens: tokenCount.optional(),
  stream: z.boolean().optional(),
  temperature: unitNumber,
  top_p: unitNumber,
  top_k: z.number().int().nullable().optional(),
  stop_sequences: z.array(z.string()).max(16).optional(),
  tools: z.array(anthropicClientTool).optional(),
  tool_choice: z
    .union([
      z.strictObject({
        type: z.enum(['auto', 'any', 'none']),
        disable_parallel_tool_use: z.boolean().optional(),
      }),
      z.strictObject({
        type: z.literal('tool'),
        name: z.string(),
        disable_parallel_tool_use: z.boolean().optional(),
      }),
    ])
    .optional(),
  thinking: z
    .union([
      z.strictObject({ type: z.literal('enabled'), budget_tokens: tokenCount }),
      z.strictObject({ type: z.literal('disabled') }),
    ])
    .optional(),
});

const SCHEMAS: Readonly<Record<BodyKind, z.ZodType<Record<string, unknown>>>> = {
  chat: chatBody,
  responses: responsesBody,
  messages: messagesBody,
};

export type AllowedBody = { ok: true; body: Record<string, unknown> } | { ok: false; message: string };

/** Names a refused tool by its type: provider-run tools are the usual reason a tool is refused. */
function toolIssue(issue: z.core.$ZodIssue, json: Record<string, unknown>): string | undefined {
  const [field, index] = issue.path;
  if (field !== 'tools' || typeof index !== 'number' || !Array.isArray(json.tools)) return undefined;
  const tool: unknown = json.tools[index];
  const type = typeof tool === 'object' && tool !== null ? (tool as { type?: unknown }).type : undefined;
  if (type === undefined || type === 'function' || type === 'custom') return undefined;
  return `tools[${index}] of type ${JSON.stringify(type)} runs on the provider's side and is not allowed; only function tools are`;
}

function describeIssue(
  issue: z.core.$ZodIssue,
  kind: BodyKind,
  routePath: string,
  json: Record<string, unknown>,
): string {
  const tool = toolIssue(issue, json);
  if (tool !== undefined) return tool;
  // The project's one key-path reading (`messages[0].content`), the same the config and IPC errors use.
  const where = zodKeyPath(issue.path.filter((p): p is string | number => typeof p !== 'symbol'));
  if (issue.code === 'unrecognized_keys') {
    const names = issue.keys.map((key) => JSON.stringify(key)).join(', ');
    const inside = where === '' ? '' : ` in ${where}`;
    const fields = where === '' ? `; accepted fields: ${Object.keys(shapeOf(kind)).join(', ')}` : '';
    return `${names} ${issue.keys.length === 1 ? 'is' : 'are'} not accepted on ${routePath}${inside}: the gateway forwards only the fields it knows to be safe${fields}`;
  }
  if (issue.code === 'invalid_union' || issue.code === 'invalid_value') {
    return `${where || 'body'}: ${issue.message} (the gateway accepts text content, inline images in user messages and function tools only)`;
  }
  return `${where ? `${where}: ` : ''}${issue.message}`;
}

function shapeOf(kind: BodyKind): Record<string, unknown> {
  return (SCHEMAS[kind] as unknown as { shape: Record<string, unknown> }).shape;
}

/** Validates a request body against its route's allowlist; the message says which field was refused. */
export function allowBody(kind: BodyKind, routePath: string, json: unknown): AllowedBody {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    return { ok: false, message: 'invalid request body: expected a JSON object' };
  }
  const parsed = SCHEMAS[kind].safeParse(json);
  if (parsed.success) return { ok: true, body: parsed.data };
  const issue = parsed.error.issues[0];
  return {
    ok: false,
    message: issue
      ? describeIssue(issue, kind, routePath, json as Record<string, unknown>)
      : 'invalid request body',
  };
}

/**
 * Bounds the output of one call: the largest of the route's output-token fields is clamped to `limit`,
 * and set to `limit` when the request names none, so every forwarded request has a worst case.
 * Returns the bound.
 */
export function clampOutputTokens(kind: BodyKind, body: Record<string, unknown>, limit: number): number {
  const fields = OUTPUT_TOKEN_FIELDS[kind];
  let bound = 0;
  for (const field of fields) {
    const value = body[field];
    if (typeof value !== 'number') continue;
    body[field] = Math.min(value, limit);
    bound = Math.max(bound, body[field] as number);
  }
  if (bound === 0) {
    body[fields[0] as string] = limit;
    bound = limit;
  }
  return bound;
}

/**
 * What an inline image counts for in a request's worst case: providers bill an image by its pixels, not
 * its base64 bytes (OpenAI's high detail at most about 1,500 tokens, Anthropic about 1,600 for the
 * largest image it takes without resizing). So each image counts this many prompt tokens instead of its
 * bytes, which would reserve a megabyte photo as a million tokens.
 */
export const IMAGE_WORST_TOKENS = 6_000;

/** The bytes of a chat body's inline images and how many there are, for the reservation. */
export function inlineImages(
  kind: BodyKind,
  body: Record<string, unknown>,
): { count: number; chars: number } {
  let count = 0;
  let chars = 0;
  if (kind !== 'chat' || !Array.isArray(body.messages)) return { count, chars };
  for (const message of body.messages as { content?: unknown }[]) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content as { type?: string; image_url?: { url?: string } }[]) {
      if (part.type !== 'image_url' || typeof part.image_url?.url !== 'string') continue;
      count += 1;
      chars += part.image_url.url.length;
    }
  }
  return { count, chars };
}
