/**
 * A prepared run, from its tools to run.done: the agent loop under the run's wall time, the final answer
 * to the run's chat, the history compacted, the outcome reported, the process ended.
 */
import type { BashClassifierSource } from '../bash-gate/fail-closed-classifier.ts';
import type { CommandRunner } from '../executor/command-runner.ts';
import { compactConversation } from '../history/compaction.ts';
import type { ConversationMessage, UserMessage } from '../history/conversation.ts';
import type { HistoryStore } from '../history/history-store.ts';
import type { HostClient } from '../ipc/host-client.ts';
import type { ChatModel, ToolSpec } from '../llm/chat-model.ts';
import type { AgentLogger } from '../logging/stderr-logger.ts';
import { LIMITS, type ChatMessage, type RunUsage } from '../protocol.ts';
import { errorMessage } from '../rpc/errors.ts';
import { createAgentTools } from '../tools/agent-tools.ts';
import { commandEnvironment } from '../tools/bash.ts';
import type { AgentTool } from '../tools/tool.ts';
import { createToolset } from '../tools/toolset.ts';
import type { Workspace } from '../workspace/confine.ts';
import { RunAbortedError, runAgentLoop } from './agent-loop.ts';
import { createCommandStart } from './command-start.ts';
import { createDraftThrottle } from './draft-throttle.ts';
import type { Inbox } from './inbox.ts';
import type { RunParams } from './run-preparation.ts';

export interface ActiveRun {
  params: RunParams;
  model: ChatModel;
  modelName: string;
  workspace: Workspace;
  history: HistoryStore;
  conversation: ConversationMessage[];
  /** Resolves once the start messages are in the stored conversation; later records wait for it. */
  stored: Promise<void>;
  systemPrompt: string;
  inbox: Inbox;
  abort: AbortController;
  seenChatId: number;
}

export interface RunExecutionDeps {
  host: HostClient;
  classifier: BashClassifierSource;
  commands: CommandRunner;
  ripgrep: () => Promise<string | null>;
  settings: {
    bashCheckTimeoutMs: number;
    historyTokens: number;
    commandHome: string;
    processEnv: NodeJS.ProcessEnv;
  };
  logger: AgentLogger;
  /** How long to wait for the host to confirm run.done. */
  doneTimeoutMs?: number;
  /** Chat messages that arrive during the run as a user turn. */
  render: (params: RunParams, messages: readonly ChatMessage[]) => UserMessage;
  /** What the model is told of a tool (memoizedToolSpec: derived once, ahead of run.start where it can). */
  toSpec?: (tool: AgentTool) => ToolSpec;
  /** The loop is over (the run takes no more input); run.done is still to be sent. */
  onLoopEnd: () => void;
  /** Called when the run's command side starts (command-start.ts): the bash parser starts loading then. */
  onCommandsStart?: () => void;
}

/**
 * How long a request is out (its body written) without an answer before the command side starts: longer
 * than a provider on loopback takes to answer, far shorter than a real one's seconds.
 */
const COMMANDS_AFTER_MS = 50;

type Outcome = { status: 'ok' } | { status: 'error'; error: string };

/** Runs the loop and reports run.done; resolves with the process's exit code. */
export async function executeRun(active: ActiveRun, deps: RunExecutionDeps): Promise<number> {
  const { params } = active;
  const { logger } = deps;
  const wallTimer = setTimeout(
    () =>
      active.abort.abort(
        new RunAbortedError(`the run's wall time of ${params.limits.wallTimeMs} ms ran out`),
      ),
    params.limits.wallTimeMs,
  );
  const usage: RunUsage = { promptTokens: 0, completionTokens: 0, toolSteps: 0 };
  let outcome: Outcome;
  try {
    if (!needsAnswer(active.conversation)) {
      logger.info({}, 'nothing new to answer');
    } else {
      await loop(active, deps, usage);
    }
    outcome = { status: 'ok' };
  } catch (error) {
    const message = errorMessage(error);
    logger.error({ error: message }, 'run failed');
    outcome = { status: 'error', error: message.slice(0, LIMITS.error) };
  } finally {
    clearTimeout(wallTimer);
    active.inbox.close();
  }
  deps.onLoopEnd();
  await finish(active, deps, outcome, usage);
  return outcome.status === 'ok' ? 0 : 1;
}

async function loop(active: ActiveRun, deps: RunExecutionDeps, usage: RunUsage): Promise<void> {
  const { params } = active;
  const { settings, logger } = deps;
  let lastOwnChatText: string | undefined;
  const tools = createToolset(
    createAgentTools({
      workspace: active.workspace,
      host: deps.host,
      classifier: deps.classifier,
      isAdmin: params.group.isAdmin,
      commandEnv: commandEnvironment(settings.processEnv, {
        timezone: params.timezone,
        home: settings.commandHome,
        setup: params.commandSetup,
      }),
      bashCheckTimeoutMs: settings.bashCheckTimeoutMs,
      ripgrep: deps.ripgrep,
      serviceTools: params.serviceTools ?? [],
      commands: deps.commands,
      onMessageSent: (m) => {
        if (m.to === undefined) lastOwnChatText = m.text.trim();
      },
      logger,
    }),
    { logger, ...(deps.toSpec ? { toSpec: deps.toSpec } : {}) },
  );
  // The command executor (and the separation check) and the bash parser: not while the container waits, not
  // ahead of a request on the container's CPU, and not on the way to a text answer (command-start.ts).
  const commandSide = createCommandStart({
    start: () => {
      void deps.commands.separation();
      deps.onCommandsStart?.();
    },
    afterMs: COMMANDS_AFTER_MS,
  });
  const model: ChatModel = {
    complete(request) {
      const answer = active.model.complete(request);
      commandSide.requested(answer);
      return answer;
    },
  };
  await runAgentLoop({
    model,
    modelName: active.modelName,
    tools,
    systemPrompt: active.systemPrompt,
    conversation: active.conversation,
    limits: params.limits,
    inbox: active.inbox,
    renderInput: (messages) => deps.render(params, messages),
    // The start messages go first in the file, whatever the model answers meanwhile.
    record: async (message) => {
      await active.stored;
      await active.history.append([message]);
    },
    sendReply: async (text) => {
      // The model already posted exactly this with send_message.
      if (text === lastOwnChatText) return;
      await deps.host.request(
        'message.send',
        { text: clipReply(text), final: true },
        { signal: active.abort.signal },
      );
    },
    ...(params.drafts
      ? {
          draft: createDraftThrottle({
            // A notification: the host never answers a draft, and a lost one is replaced by the next.
            send: (text) => deps.host.notify('run.draft', { text }),
            now: () => performance.now(),
          }),
        }
      : {}),
    signal: active.abort.signal,
    usage,
    logger,
  });
}

async function finish(active: ActiveRun, deps: RunExecutionDeps, outcome: Outcome, usage: RunUsage) {
  const { logger } = deps;
  await compactAtEnd(active, deps.settings.historyTokens).catch((error: unknown) =>
    logger.warn({ error: String(error) }, 'history compaction failed'),
  );
  try {
    await deps.host.request('run.done', { ...outcome, usage }, { timeoutMs: deps.doneTimeoutMs ?? 10_000 });
  } catch (error) {
    logger.warn({ error: errorMessage(error) }, 'run.done was not confirmed');
  }
  logger.info({ status: outcome.status, usage }, 'run finished');
}

async function compactAtEnd(active: ActiveRun, historyTokens: number): Promise<void> {
  await active.stored.catch(() => undefined);
  const { messages } = await active.history.load();
  const compacted = compactConversation(messages, historyTokens);
  if (compacted.dropped > 0 || compacted.shortened > 0) await active.history.replace(compacted.messages);
}

/** A conversation needs an answer unless it is empty or ends with one. */
function needsAnswer(conversation: readonly ConversationMessage[]): boolean {
  const last = conversation[conversation.length - 1];
  if (!last) return false;
  return !(last.role === 'assistant' && (!last.toolCalls || last.toolCalls.length === 0));
}

function clipReply(text: string): string {
  if (text.length <= LIMITS.chatText) return text;
  const note = '\n[… message shortened]';
  return text.slice(0, LIMITS.chatText - note.length) + note;
}
