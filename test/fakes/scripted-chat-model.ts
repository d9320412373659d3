import type {
  ChatModel,
  CompletionRequest,
  CompletionResponse,
} from '../../container-agent/src/llm/chat-model.ts';

export type ScriptStep =
  | Partial<CompletionResponse>
  | ((request: CompletionRequest) => Partial<CompletionResponse> | Promise<Partial<CompletionResponse>>);

/** A model for agent unit tests: plays a script of answers and records what it was asked. */
export function scriptedChatModel(
  steps: ScriptStep[],
  usage: CompletionResponse['usage'] = { promptTokens: 10, completionTokens: 5 },
) {
  const requests: CompletionRequest[] = [];
  const model: ChatModel = {
    async complete(request) {
      requests.push({ ...request, messages: [...request.messages] });
      const step = steps.shift();
      if (!step) throw new Error('the script ran out');
      const partial = typeof step === 'function' ? await step(request) : step;
      return { content: null, toolCalls: [], finishReason: 'stop', usage, ...partial };
    },
  };
  return { model, requests };
}
