/**
 * The tool loop of one run: ask the model, run the tools it asks for, repeat; post the final answer;
 * pick up messages that arrived meanwhile; stop when nothing is left. Bounded by tool steps (rounds
 * with tool calls), output tokens per call, and the run's abort signal (wall time, run.stop).
 */
import type { ConversationMessage, UserMessage } from '../history/conversation.ts';
import type { ChatModel, ModelMessage } from '../llm/chat-model.ts';
import type { AgentLogger } from '../logging/stderr-logger.ts';
import type { ChatMessage, RunLimits, RunUsage } from '../protocol.ts';
import type { Toolset } from '../tools/toolset.ts';
import type { Inbox } from './inbox.ts';

export const STEP_LIMIT_NOTE =
  '[Note from the agent runtime, not from the chat] You have used every tool step this run allows. Do not call tools: answer now with what you have, and say what is left undone.';

export interface AgentLoopOptions {
  model: ChatModel;
  modelName: string;
  tools: Toolset;
  systemPrompt: string;
  /** The conversation so far, ending with the messages this run answers. */
  conversation: readonly ConversationMessage[];
  limits: Pick<RunLimits, 'maxToolSteps' | 'maxOutputTokens'>;
  inbox: Inbox;
  /** Turns chat messages that arrive during the run into a user turn. */
  renderInput: (messages: ChatMessage[]) => UserMessage;
  /** Persists a message as soon as it joins the conversation. */
  record: (message: ConversationMessage) => Promise<void>;
  /** Posts the final answer to the run's own chat. */
  sendReply: (text: string) => Promise<void>;
  /** The answer so far while the model writes it (run.draft, throttled); absent: the host takes no drafts. */
  draft?: (text: string) => void;
  signal: AbortSignal;
  /** Accumulates usage; pass one in to keep the figures when the loop throws. */
  usage?: RunUsage;
  logger?: Pick<AgentLogger, 'info' | 'debug'>;
}

export interface AgentLoopResult {
  usage: RunUsage;
  /** The last final answer (may be empty). */
  finalText: string;
}

export class RunAbortedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RunAbortedError';
  }
}

export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentLoopResult> {
  const { model, tools, inbox, signal, limits } = options;
  const conversation: ConversationMessage[] = [...options.conversation];
  const usage: RunUsage = options.usage ?? { promptTokens: 0, completionTokens: 0, toolSteps: 0 };
  let finalText = '';

  const add = async (message: ConversationMessage): Promise<void> => {
    conversation.push(message);
    await options.record(message);
  };
  const throwIfAborted = (): void => {
    if (signal.aborted) throw new RunAbortedError(abortReason(signal));
  };

  for (;;) {
    throwIfAborted();
    const arrived = inbox.take();
    if (arrived.length > 0) await add(options.renderInput(arrived));

    const toolsAllowed = usage.toolSteps < limits.maxToolSteps;
    const messages: ModelMessage[] = [{ role: 'system', content: options.systemPrompt }, ...conversation];
    // A user-role note: some providers refuse system messages after the conversation has started.
    if (!toolsAllowed) messages.push({ role: 'user', note: true, content: STEP_LIMIT_NOTE });

    let response;
    try {
      response = await model.complete({
        model: options.modelName,
        messages,
        tools: tools.specs,
        toolChoice: toolsAllowed ? 'auto' : 'none',
        maxOutputTokens: limits.maxOutputTokens,
        signal,
        ...(options.draft ? { onDraft: options.draft } : {}),
      });
    } catch (error) {
      throwIfAborted();
      throw error;
    }
    usage.promptTokens += response.usage.promptTokens;
    usage.completionTokens += response.usage.completionTokens;
    options.logger?.debug(
      {
        finishReason: response.finishReason,
        toolCalls: response.toolCalls.map((c) => c.name),
        usage: response.usage,
      },
      'model answered',
    );

    if (toolsAllowed && response.toolCalls.length > 0) {
      usage.toolSteps++;
      await add({ role: 'assistant', content: response.content, toolCalls: response.toolCalls });
      // Sequentially: tools share the workspace, and their order is the order the model asked for.
      for (const call of response.toolCalls) {
        throwIfAborted();
        options.logger?.info({ tool: call.name }, 'tool call');
        const output = await tools.execute(call, { signal });
        await add({ role: 'tool', toolCallId: call.id, content: output });
      }
      continue;
    }

    // A final answer. Tool calls made past the step limit are dropped: without results they would
    // leave orphans in the history.
    finalText = (response.content ?? '').trim();
    // Sent first, remembered after: if sending fails, the history does not claim an answer the group never
    // got, so the retried run answers again instead of finding "nothing new to answer".
    if (finalText !== '') {
      throwIfAborted();
      await options.sendReply(finalText);
    }
    await add({ role: 'assistant', content: finalText });
    // Messages accepted while the model was answering still get an answer in this run.
    if (inbox.hasPending()) continue;
    inbox.close();
    return { usage, finalText };
  }
}

function abortReason(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason.message;
  if (typeof reason === 'string') return reason;
  return 'the run was aborted';
}
