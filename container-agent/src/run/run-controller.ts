/**
 * One agent process serves one run: run.start prepares it (history, memory, prompt, tools) and
 * acknowledges the messages once they are in the stored conversation; the loop then runs in the
 * background; run.done reports the outcome and the process exits.
 */
import type { CommandRunner } from '../executor/command-runner.ts';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { BashClassifierSource } from '../bash-gate/fail-closed-classifier.ts';
import { compactConversation } from '../history/compaction.ts';
import { maxChatId, type ConversationMessage, type UserMessage } from '../history/conversation.ts';
import { createHistoryStore, type HistoryStore } from '../history/history-store.ts';
import type { HostClient } from '../ipc/host-client.ts';
import type { ChatModel } from '../llm/chat-model.ts';
import type { AgentLogger } from '../logging/stderr-logger.ts';
import { renderChatMessages } from '../prompt/chat-messages.ts';
import { MAX_MEMORY_CHARS, buildSystemPrompt } from '../prompt/system-prompt.ts';
import {
  LIMITS,
  RPC_ERROR_CODES,
  type AgentMethods,
  type ChatMessage,
  type RunStartParams,
  type RunUsage,
} from '../protocol.ts';
import { RpcError } from '../rpc/errors.ts';
import type { RpcHandlers } from '../rpc/peer.ts';
import { createAgentTools } from '../tools/agent-tools.ts';
import { commandEnvironment } from '../tools/bash.ts';
import { createToolset } from '../tools/toolset.ts';
import { createWorkspace, type Workspace } from '../workspace/confine.ts';
import { RunAbortedError, runAgentLoop } from './agent-loop.ts';
import { createInbox, type Inbox } from './inbox.ts';
import { errorMessage } from '../rpc/errors.ts';

const PRIVATE_FOLDER = 0o700;

export interface RunControllerSettings {
  workspaceRoot: string;
  defaultModel?: string;
  bashCheckTimeoutMs: number;
  historyTokens: number;
  /** HOME for bash commands. */
  commandHome: string;
  /** The agent's own environment, from which bash commands get a filtered copy. */
  processEnv: NodeJS.ProcessEnv;
}

export interface RunControllerDeps {
  host: HostClient;
  /** The LLM client of a run, built at run.start with the run's gateway key (held only in its memory). */
  createModel(gatewayKey: string): ChatModel;
  classifier: BashClassifierSource;
  settings: RunControllerSettings;
  now: () => Date;
  logger: AgentLogger;
  /** Ends the process (after flushing stdout). */
  exit: (code: number) => void;
  ripgrep: () => Promise<string | null>;
  /** Where bash commands run: the command executor, under the commands' own uid. */
  commands: CommandRunner;
  createNonce?: () => string;
  /** How long to wait for the host to confirm run.done. */
  doneTimeoutMs?: number;
}

export interface RunController {
  handlers: RpcHandlers<AgentMethods>;
  /** Resolves when the run has finished and run.done was sent (or could not be). */
  readonly finished: Promise<number>;
  /** Aborts the active run at once (kills its commands, abandons its requests); for when the host is gone. */
  abort(reason: string): void;
}

type Phase = 'idle' | 'starting' | 'running' | 'finished';

/** run.start without its gateway key: the key lives only inside the run's model client. */
type RunParams = Omit<RunStartParams, 'gatewayKey'>;

interface ActiveRun {
  params: RunParams;
  model: ChatModel;
  modelName: string;
  workspace: Workspace;
  history: HistoryStore;
  conversation: ConversationMessage[];
  systemPrompt: string;
  inbox: Inbox;
  abort: AbortController;
  seenChatId: number;
}

/** The photos among `messages` the host offered as images (at most 16 per turn). */
function withImages(messages: readonly ChatMessage[]): { images?: { path: string; mime: string }[] } {
  const images = messages.flatMap((m) => (m.image ? [m.image] : [])).slice(-16);
  return images.length > 0 ? { images } : {};
}

export function createRunController(deps: RunControllerDeps): RunController {
  const { settings, logger } = deps;
  const createNonce = deps.createNonce ?? (() => randomBytes(6).toString('hex'));
  let phase: Phase = 'idle';
  let run: ActiveRun | undefined;
  let preparing: Promise<ActiveRun> | undefined;
  let resolveFinished: (code: number) => void = () => {};
  const finished = new Promise<number>((resolve) => (resolveFinished = resolve));

  const render = (params: RunParams, messages: readonly ChatMessage[]): UserMessage => ({
    role: 'user',
    content: renderChatMessages(messages, {
      assistantName: params.assistantName,
      timezone: params.timezone,
      nonce: createNonce(),
      trusted: params.group.isAdmin,
    }),
    chatIds: messages.map((m) => m.id),
    ...withImages(messages),
  });

  const prepare = async (params: RunParams, model: ChatModel, modelName: string): Promise<ActiveRun> => {
    const root = settings.workspaceRoot;
    const groupDir = path.join(root, 'group');
    const sessionDir = path.join(root, 'session');
    await fs.mkdir(groupDir, { recursive: true });
    // The session folder is the agent's alone (commands share its gid): nothing a command writes is ever
    // loaded as the agent's own. The separation check refuses commands until this holds.
    await fs.mkdir(sessionDir, { recursive: true, mode: PRIVATE_FOLDER });
    await fs.chmod(sessionDir, PRIVATE_FOLDER);
    const workspace = createWorkspace({ root, cwd: groupDir });
    const history = createHistoryStore({ sessionDir, now: deps.now });

    const loaded = await history.load();
    if (loaded.skippedLines > 0)
      logger.warn({ skippedLines: loaded.skippedLines }, 'history: unreadable lines skipped');
    if (loaded.setAside)
      logger.warn({ reason: loaded.setAside }, "history: a file not the agent's set aside");
    const compacted = compactConversation(loaded.messages, settings.historyTokens);
    if (compacted.dropped > 0 || compacted.shortened > 0 || loaded.skippedLines > 0) {
      await history.replace(compacted.messages);
      logger.info({ dropped: compacted.dropped, shortened: compacted.shortened }, 'history compacted');
    }
    const conversation = compacted.messages;
    let seenChatId = maxChatId(conversation);

    // A retried run gets messages it already took in; they are in the conversation once.
    const fresh = params.messages.filter((m) => m.id > seenChatId);
    if (fresh.length > 0) {
      const turn = render(params, fresh);
      await history.append([turn]);
      conversation.push(turn);
      seenChatId = Math.max(seenChatId, ...fresh.map((m) => m.id));
    }

    const systemPrompt = buildSystemPrompt({
      assistantName: params.assistantName,
      group: params.group,
      timezone: params.timezone,
      formatting: params.formatting,
      now: deps.now(),
      workspaceRoot: root,
      memory: await readMemory(workspace),
      credentials: params.commandSetup?.env.CARAPACE_CREDENTIALS,
    });
    return {
      params,
      model,
      modelName,
      workspace,
      history,
      conversation,
      systemPrompt,
      inbox: createInbox(),
      abort: new AbortController(),
      seenChatId,
    };
  };

  const execute = async (active: ActiveRun): Promise<void> => {
    const { params } = active;
    const wallTimer = setTimeout(
      () =>
        active.abort.abort(
          new RunAbortedError(`the run's wall time of ${params.limits.wallTimeMs} ms ran out`),
        ),
      params.limits.wallTimeMs,
    );
    let lastOwnChatText: string | undefined;
    const usage: RunUsage = { promptTokens: 0, completionTokens: 0, toolSteps: 0 };
    let outcome: { status: 'ok' } | { status: 'error'; error: string };
    try {
      if (!needsAnswer(active.conversation)) {
        logger.info({}, 'nothing new to answer');
        outcome = { status: 'ok' };
      } else {
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
          { logger },
        );
        await runAgentLoop({
          model: active.model,
          modelName: active.modelName,
          tools,
          systemPrompt: active.systemPrompt,
          conversation: active.conversation,
          limits: params.limits,
          inbox: active.inbox,
          renderInput: (messages) => render(params, messages),
          record: (message) => active.history.append([message]),
          sendReply: async (text) => {
            // The model already posted exactly this with send_message.
            if (text === lastOwnChatText) return;
            await deps.host.request(
              'message.send',
              { text: clipReply(text), final: true },
              { signal: active.abort.signal },
            );
          },
          signal: active.abort.signal,
          usage,
          logger,
        });
        outcome = { status: 'ok' };
      }
    } catch (error) {
      const message = errorMessage(error);
      logger.error({ error: message }, 'run failed');
      outcome = { status: 'error', error: message.slice(0, LIMITS.error) };
    } finally {
      clearTimeout(wallTimer);
      active.inbox.close();
    }
    phase = 'finished';

    await compactAtEnd(active).catch((error: unknown) =>
      logger.warn({ error: String(error) }, 'history compaction failed'),
    );
    try {
      await deps.host.request('run.done', { ...outcome, usage }, { timeoutMs: deps.doneTimeoutMs ?? 10_000 });
    } catch (error) {
      logger.warn({ error: errorMessage(error) }, 'run.done was not confirmed');
    }
    const code = outcome.status === 'ok' ? 0 : 1;
    logger.info({ status: outcome.status, usage }, 'run finished');
    resolveFinished(code);
    deps.exit(code);
  };

  const compactAtEnd = async (active: ActiveRun): Promise<void> => {
    const { messages } = await active.history.load();
    const compacted = compactConversation(messages, settings.historyTokens);
    if (compacted.dropped > 0 || compacted.shortened > 0) await active.history.replace(compacted.messages);
  };

  const handlers: RpcHandlers<AgentMethods> = {
    'run.start': async ({ gatewayKey, ...params }) => {
      if (phase !== 'idle')
        throw new RpcError(RPC_ERROR_CODES.invalidRequest, 'this agent process has already started its run');
      const modelName = params.model ?? settings.defaultModel;
      if (!modelName) {
        throw new RpcError(
          RPC_ERROR_CODES.invalidParams,
          'no model: pass run.start.model or set CARAPACE_MODEL in the container',
        );
      }
      phase = 'starting';
      logger.info(
        { runId: params.runId, group: params.group.id, messages: params.messages.length },
        'run.start',
      );
      try {
        preparing = prepare(params, deps.createModel(gatewayKey), modelName);
        run = await preparing;
      } catch (error) {
        phase = 'finished';
        logger.error({ error: errorMessage(error) }, 'run could not be prepared');
        resolveFinished(1);
        // Let the error reply go out first.
        setImmediate(() => deps.exit(1));
        throw error;
      }
      phase = 'running';
      const active = run;
      setImmediate(() => void execute(active));
      return { accepted: true as const };
    },
    'run.input': async ({ messages }) => {
      // Messages may arrive while run.start is still being prepared; they wait for it.
      const active = phase === 'starting' && preparing ? await preparing.catch(() => undefined) : run;
      if (!active) throw new RpcError(RPC_ERROR_CODES.runNotActive, 'no run is active: send run.start first');
      if (phase === 'finished' || active.inbox.closed) return { accepted: false };
      const fresh = messages.filter((m) => m.id > active.seenChatId);
      if (fresh.length === 0) return { accepted: true };
      if (!active.inbox.offer(fresh)) return { accepted: false };
      active.seenChatId = Math.max(active.seenChatId, ...fresh.map((m) => m.id));
      return { accepted: true };
    },
    'run.stop': ({ reason }) => {
      logger.info({ reason }, 'run.stop');
      if (!run || phase !== 'running') {
        if (phase !== 'finished') {
          phase = 'finished';
          resolveFinished(0);
          deps.exit(0);
        }
        return;
      }
      run.abort.abort(new RunAbortedError(`stopped by the host: ${reason || 'no reason given'}`));
    },
  };

  return {
    handlers,
    finished,
    abort(reason) {
      run?.abort.abort(new RunAbortedError(reason));
    },
  };
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

async function readMemory(workspace: Workspace): Promise<string | null> {
  let file: string;
  try {
    file = await workspace.resolve('AGENT.md');
  } catch {
    return null;
  }
  try {
    const handle = await fs.open(file, 'r');
    try {
      const buffer = Buffer.alloc(MAX_MEMORY_CHARS * 4 + 4);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      return buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return null;
  }
}
