import type { FakeUsage } from './fake-provider-script.ts';

/** A scripted text or tool-call reply, reduced to what every protocol needs. */
export interface NormalizedReply {
  id: number;
  model: string;
  text: string;
  chunks: string[];
  calls: { id: string; name: string; arguments: string }[];
  finishReason: 'stop' | 'tool_calls' | string;
  usage: FakeUsage;
  created: number;
}

/** One SSE block. `content` frames carry generated text or arguments and are what pacing counts. */
export interface Frame {
  event?: string;
  data: string;
  content: boolean;
}

export function encodeFrame(frame: Frame): string {
  return (frame.event ? `event: ${frame.event}\n` : '') + `data: ${frame.data}\n\n`;
}

function halves(text: string): string[] {
  if (text.length < 2) return [text];
  const middle = Math.floor(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)];
}

// --- OpenAI chat completions -------------------------------------------------------------------------

function chatUsage(usage: FakeUsage) {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    ...(usage.costUsd !== undefined ? { cost: usage.costUsd } : {}),
  };
}

export function chatJson(r: NormalizedReply): unknown {
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: r.text.length > 0 || r.calls.length === 0 ? r.text : null,
    refusal: null,
  };
  if (r.calls.length > 0) {
    message.tool_calls = r.calls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  return {
    id: `chatcmpl-fake-${r.id}`,
    object: 'chat.completion',
    created: r.created,
    model: r.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: r.finishReason }],
    usage: chatUsage(r.usage),
  };
}

export function chatFrames(r: NormalizedReply, includeUsage: boolean): Frame[] {
  const base = {
    id: `chatcmpl-fake-${r.id}`,
    object: 'chat.completion.chunk',
    created: r.created,
    model: r.model,
  };
  const chunk = (delta: Record<string, unknown>, finishReason: string | null, content: boolean): Frame => ({
    data: JSON.stringify({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...(includeUsage ? { usage: null } : {}),
    }),
    content,
  });
  const frames: Frame[] = [chunk({ role: 'assistant', content: '' }, null, false)];
  for (const piece of r.chunks) frames.push(chunk({ content: piece }, null, true));
  r.calls.forEach((call, index) => {
    frames.push(
      chunk(
        {
          tool_calls: [
            { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
          ],
        },
        null,
        false,
      ),
    );
    for (const part of halves(call.arguments))
      frames.push(chunk({ tool_calls: [{ index, function: { arguments: part } }] }, null, true));
  });
  frames.push(chunk({}, r.finishReason, false));
  if (includeUsage)
    frames.push({
      data: JSON.stringify({ ...base, choices: [], usage: chatUsage(r.usage) }),
      content: false,
    });
  frames.push({ data: '[DONE]', content: false });
  return frames;
}

// --- OpenAI responses ---------------------------------------------------------------------------------

function responseObject(r: NormalizedReply, status: 'in_progress' | 'completed'): Record<string, unknown> {
  const output: unknown[] = [];
  if (status === 'completed') {
    if (r.text.length > 0 || r.calls.length === 0) {
      output.push({
        type: 'message',
        id: `msg_fake_${r.id}`,
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: r.text, annotations: [] }],
      });
    }
    for (const call of r.calls) {
      output.push({
        type: 'function_call',
        id: `fc_${call.id}`,
        call_id: call.id,
        name: call.name,
        arguments: call.arguments,
        status: 'completed',
      });
    }
  }
  return {
    id: `resp_fake_${r.id}`,
    object: 'response',
    created_at: r.created,
    status,
    model: r.model,
    output,
    usage:
      status === 'completed'
        ? {
            input_tokens: r.usage.promptTokens,
            output_tokens: r.usage.completionTokens,
            total_tokens: r.usage.promptTokens + r.usage.completionTokens,
          }
        : null,
  };
}

export function responsesJson(r: NormalizedReply): unknown {
  return responseObject(r, 'completed');
}

export function responsesFrames(r: NormalizedReply): Frame[] {
  let sequence = 0;
  const frame = (type: string, payload: Record<string, unknown>, content = false): Frame => ({
    event: type,
    data: JSON.stringify({ type, sequence_number: sequence++, ...payload }),
    content,
  });
  const frames = [frame('response.created', { response: responseObject(r, 'in_progress') })];
  for (const piece of r.chunks) {
    frames.push(
      frame(
        'response.output_text.delta',
        { item_id: `msg_fake_${r.id}`, output_index: 0, content_index: 0, delta: piece },
        true,
      ),
    );
  }
  frames.push(frame('response.completed', { response: responseObject(r, 'completed') }));
  return frames;
}

// --- Anthropic messages -------------------------------------------------------------------------------

function anthropicStopReason(r: NormalizedReply): string {
  if (r.calls.length > 0) return 'tool_use';
  return r.finishReason === 'length' ? 'max_tokens' : 'end_turn';
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return {};
  }
}

export function messagesJson(r: NormalizedReply): unknown {
  const content: unknown[] = [];
  if (r.text.length > 0 || r.calls.length === 0) content.push({ type: 'text', text: r.text });
  for (const call of r.calls)
    content.push({ type: 'tool_use', id: call.id, name: call.name, input: parseArguments(call.arguments) });
  return {
    id: `msg_fake_${r.id}`,
    type: 'message',
    role: 'assistant',
    model: r.model,
    content,
    stop_reason: anthropicStopReason(r),
    stop_sequence: null,
    usage: { input_tokens: r.usage.promptTokens, output_tokens: r.usage.completionTokens },
  };
}

export function messagesFrames(r: NormalizedReply): Frame[] {
  const frame = (type: string, payload: Record<string, unknown>, content = false): Frame => ({
    event: type,
    data: JSON.stringify({ type, ...payload }),
    content,
  });
  const frames: Frame[] = [
    frame('message_start', {
      message: {
        id: `msg_fake_${r.id}`,
        type: 'message',
        role: 'assistant',
        model: r.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: r.usage.promptTokens, output_tokens: 1 },
      },
    }),
  ];
  let index = 0;
  if (r.text.length > 0 || r.calls.length === 0) {
    frames.push(frame('content_block_start', { index, content_block: { type: 'text', text: '' } }));
    frames.push(frame('ping', {}));
    for (const piece of r.chunks)
      frames.push(frame('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }, true));
    frames.push(frame('content_block_stop', { index }));
    index++;
  }
  for (const call of r.calls) {
    frames.push(
      frame('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
      }),
    );
    for (const part of halves(call.arguments)) {
      frames.push(
        frame(
          'content_block_delta',
          { index, delta: { type: 'input_json_delta', partial_json: part } },
          true,
        ),
      );
    }
    frames.push(frame('content_block_stop', { index }));
    index++;
  }
  frames.push(
    frame('message_delta', {
      delta: { stop_reason: anthropicStopReason(r), stop_sequence: null },
      usage: { output_tokens: r.usage.completionTokens },
    }),
  );
  frames.push(frame('message_stop', {}));
  return frames;
}

// --- Errors -------------------------------------------------------------------------------------------

const OPENAI_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  404: 'invalid_request_error',
  429: 'rate_limit_exceeded',
};
const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

export function errorJson(
  anthropic: boolean,
  status: number,
  message: string,
  code: string | null = null,
): unknown {
  if (anthropic)
    return { type: 'error', error: { type: ANTHROPIC_ERROR_TYPES[status] ?? 'api_error', message } };
  return { error: { message, type: OPENAI_ERROR_TYPES[status] ?? 'server_error', param: null, code } };
}
