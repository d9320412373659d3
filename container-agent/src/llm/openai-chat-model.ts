/**
 * ChatModel over the openai SDK's chat completions, pointed at the host's gateway.
 */
import OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { ChatModel, CompletionRequest, CompletionResponse, ModelMessage } from './chat-model.ts';
import type { ImageRef } from './image-reader.ts';

export interface OpenAiChatModelOptions {
  baseURL: string;
  /**
   * The key, or where to get it at each request: a client built before its key is known (while a
   * pre-started container waits) asks for it only once it sends something.
   */
  apiKey: string | (() => Promise<string>);
  /** Per HTTP request; the run's wall-time signal aborts earlier. */
  timeoutMs?: number;
  maxRetries?: number;
  /** For tests: a fetch to use instead of the global one. */
  fetch?: typeof fetch;
  /** Reads a photo the host named as a data URL (image-reader.ts); without it photos stay text. */
  readImage?: (image: ImageRef) => Promise<string | undefined>;
}

type TokenLimitParam = 'max_completion_tokens' | 'max_tokens';

export function createOpenAiChatModel(options: OpenAiChatModelOptions): ChatModel {
  const client = new OpenAI({
    baseURL: options.baseURL,
    apiKey: options.apiKey,
    timeout: options.timeoutMs ?? 10 * 60_000,
    maxRetries: options.maxRetries ?? 2,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  // Newer OpenAI models only accept max_completion_tokens; some compatible servers only max_tokens.
  // Start with the current name and switch once if the provider rejects it.
  let tokenParam: TokenLimitParam = 'max_completion_tokens';
  // Some compatible servers omit tool call ids; the history needs unique ones to pair results.
  let generatedIds = 0;

  const create = async (request: CompletionRequest, param: TokenLimitParam) => {
    const body: ChatCompletionCreateParamsNonStreaming = {
      model: request.model,
      messages: await withImageParts(
        request.messages.map(toOpenAiMessage),
        request.messages,
        options.readImage,
      ),
      [param]: request.maxOutputTokens,
    };
    if (request.tools.length > 0) {
      body.tools = request.tools.map((tool): ChatCompletionTool => ({
        type: 'function',
        function: { name: tool.name, description: tool.description, parameters: tool.parameters },
      }));
      body.tool_choice = request.toolChoice;
    }
    if (!request.onDraft) return client.chat.completions.create(body, { signal: request.signal });
    const chunks = await client.chat.completions.create(
      { ...body, stream: true, stream_options: { include_usage: true } },
      { signal: request.signal },
    );
    return collectStream(chunks, request.onDraft);
  };

  return {
    async complete(request): Promise<CompletionResponse> {
      let completion;
      try {
        completion = await create(request, tokenParam);
      } catch (error) {
        const other: TokenLimitParam =
          tokenParam === 'max_completion_tokens' ? 'max_tokens' : 'max_completion_tokens';
        if (!(error instanceof OpenAI.BadRequestError) || !String(error.message).includes(tokenParam))
          throw error;
        tokenParam = other;
        completion = await create(request, tokenParam);
      }
      const choice = completion.choices[0];
      if (!choice) throw new Error('the model returned no choices');
      const message = choice.message;
      const toolCalls = (message.tool_calls ?? []).flatMap((call) =>
        call.type === 'function'
          ? [
              {
                id: call.id || `call_generated_${++generatedIds}`,
                name: call.function.name,
                arguments: call.function.arguments ?? '',
              },
            ]
          : [],
      );
      return {
        content: message.content ?? null,
        toolCalls,
        finishReason: choice.finish_reason ?? 'stop',
        usage: {
          promptTokens: completion.usage?.prompt_tokens ?? 0,
          completionTokens: completion.usage?.completion_tokens ?? 0,
        },
      };
    },
  };
}

/**
 * A streamed answer put back together as the completion it stands for, telling `onDraft` the text so far
 * at each content chunk until the first tool call shows: from then on the turn is a tool step, not the
 * answer. Tool calls arrive in pieces keyed by their index (OpenAI's chunk format).
 */
async function collectStream(
  chunks: AsyncIterable<ChatCompletionChunk>,
  onDraft: (text: string) => void,
): Promise<ChatCompletion> {
  let content: string | null = null;
  let finishReason: ChatCompletion.Choice['finish_reason'] | null = null;
  let usage: ChatCompletion['usage'];
  let sawChoice = false;
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  for await (const chunk of chunks) {
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    sawChoice = true;
    if (choice.finish_reason) finishReason = choice.finish_reason;
    for (const part of choice.delta.tool_calls ?? []) {
      const call = calls.get(part.index) ?? { id: '', name: '', arguments: '' };
      call.id ||= part.id ?? '';
      call.name += part.function?.name ?? '';
      call.arguments += part.function?.arguments ?? '';
      calls.set(part.index, call);
    }
    if (choice.delta.content) {
      content = (content ?? '') + choice.delta.content;
      if (calls.size === 0) onDraft(content);
    }
  }
  const toolCalls = [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, call]) => ({
      id: call.id,
      type: 'function' as const,
      function: { name: call.name, arguments: call.arguments },
    }));
  return {
    id: 'streamed',
    object: 'chat.completion',
    created: 0,
    model: '',
    choices: sawChoice
      ? [
          {
            index: 0,
            logprobs: null,
            finish_reason: finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
            message: {
              role: 'assistant',
              content,
              refusal: null,
              ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
            },
          },
        ]
      : [],
    ...(usage ? { usage } : {}),
  };
}

/**
 * The newest user turn with photos gets them as image parts after its text; older turns keep their text
 * only, so a photo is paid for while it is being talked about, not in every later request of the session.
 */
async function withImageParts(
  converted: ChatCompletionMessageParam[],
  messages: readonly ModelMessage[],
  readImage: OpenAiChatModelOptions['readImage'],
): Promise<ChatCompletionMessageParam[]> {
  if (!readImage) return converted;
  const index = messages.findLastIndex((m) => m.role === 'user' && (m.images?.length ?? 0) > 0);
  const message = messages[index];
  if (!message || message.role !== 'user' || !message.images) return converted;
  const urls = (await Promise.all(message.images.map(readImage))).filter((u): u is string => !!u);
  if (urls.length === 0) return converted;
  const out = [...converted];
  out[index] = {
    role: 'user',
    content: [
      { type: 'text', text: message.content },
      ...urls.map((url) => ({ type: 'image_url' as const, image_url: { url } })),
    ],
  };
  return out;
}

function toOpenAiMessage(message: ModelMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      return { role: 'user', content: message.content };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    case 'assistant':
      if (message.toolCalls && message.toolCalls.length > 0) {
        return {
          role: 'assistant',
          content: message.content,
          tool_calls: message.toolCalls.map((call) => ({
            id: call.id,
            type: 'function' as const,
            function: { name: call.name, arguments: call.arguments },
          })),
        };
      }
      return { role: 'assistant', content: message.content ?? '' };
  }
}
