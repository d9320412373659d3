/**
 * One agent process serves one run: run.start prepares it (history, memory, prompt, tools) and
 * acknowledges the messages once they are in the stored conversation; the loop then runs in the
 * background; run.done reports the outcome and the process exits.
 *
 * The parts: run-preparation.ts reads what a run starts from (the stored conversation loads while the
 * process waits for run.start), run-execution.ts runs the loop and reports; this file holds the phase and
 * answers the host's calls. The first LLM request does not wait for the start messages to be stored: the
 * acknowledgement does, and so does every later write to the history.
 */
import { randomBytes } from 'node:crypto';
import type { BashClassifierSource } from '../bash-gate/fail-closed-classifier.ts';
import type { CommandRunner } from '../executor/command-runner.ts';
import { maxChatId } from '../history/conversation.ts';
import type { HostClient } from '../ipc/host-client.ts';
import type { ChatModel } from '../llm/chat-model.ts';
import type { AgentLogger } from '../logging/stderr-logger.ts';
import { RPC_ERROR_CODES, type AgentMethods, type ChatMessage } from '../protocol.ts';
import { RpcError, errorMessage } from '../rpc/errors.ts';
import type { RpcHandlers } from '../rpc/peer.ts';
import { RunAbortedError } from './agent-loop.ts';
import { memoizedToolSpec } from '../tools/tool.ts';
import { createInbox } from './inbox.ts';
import { rehearseRunStart } from './run-rehearsal.ts';
import { executeRun, type ActiveRun } from './run-execution.ts';
import {
  freshMessages,
  loadStoredConversation,
  refreshStoredConversation,
  renderTurn,
  systemPromptFor,
  type RunParams,
  type StoredConversation,
} from './run-preparation.ts';

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
  /** Called when the run's command side starts (run/command-start.ts). */
  onCommandsStart?: () => void;
  /**
   * Rehearses a run's start while the process waits for run.start (run-rehearsal.ts), `delayMs` after the
   * stored conversation is loaded, unless run.start came first; `done` hears how it went ('done' when it
   * finished and run.start has still not come).
   */
  rehearsal?: {
    createModel(baseURL: string, apiKey: string): ChatModel;
    delayMs: number;
    done(result: string): void;
  };
}

export interface RunController {
  handlers: RpcHandlers<AgentMethods>;
  /** Resolves when the run has finished and run.done was sent (or could not be). */
  readonly finished: Promise<number>;
  /** Aborts the active run at once (kills its commands, abandons its requests); for when the host is gone. */
  abort(reason: string): void;
}

type Phase = 'idle' | 'starting' | 'running' | 'finished';

export function createRunController(deps: RunControllerDeps): RunController {
  const { settings, logger } = deps;
  const createNonce = deps.createNonce ?? (() => randomBytes(6).toString('hex'));
  let phase: Phase = 'idle';
  let run: ActiveRun | undefined;
  let preparing: Promise<ActiveRun> | undefined;
  let resolveFinished: (code: number) => void = () => {};
  const finished = new Promise<number>((resolve) => (resolveFinished = resolve));
  const render = (params: RunParams, messages: readonly ChatMessage[]) =>
    renderTurn(params, messages, createNonce());
  // Shared by the rehearsal and the run: the tools' JSON Schemas are derived while the process waits.
  const toSpec = memoizedToolSpec();

  // While the process waits for run.start. A failure here is not the run's: run.start loads again.
  const waiting = loadStoredConversation(settings, deps.now, logger);
  waiting.catch(() => undefined);
  const { rehearsal } = deps;
  if (rehearsal) {
    const idle = () => phase === 'idle';
    void waiting
      .then(() => new Promise((resolve) => setTimeout(resolve, rehearsal.delayMs)))
      .then(async () => {
        const w = await waiting;
        return idle()
          ? rehearseRunStart({
              workspace: w.workspace,
              render,
              systemPrompt: (params, workspace) => systemPromptFor(params, workspace, settings, deps.now()),
              createModel: rehearsal.createModel,
              superseded: () => !idle(),
              toSpec,
            })
          : 'superseded';
      })
      // 'done' only while still waiting: a run that started meanwhile is not to wait for what follows.
      .then((result) => (result === 'done' && !idle() ? 'superseded' : result))
      .then(rehearsal.done, (error: unknown) => rehearsal.done(errorMessage(error)));
  }
  const storedConversation = async (): Promise<StoredConversation> => {
    const early = await waiting.catch((error: unknown) => {
      logger.warn({ error: errorMessage(error) }, 'history could not be loaded ahead of run.start');
      return undefined;
    });
    return early
      ? refreshStoredConversation(early, settings, logger)
      : loadStoredConversation(settings, deps.now, logger);
  };

  const prepare = async (params: RunParams, model: ChatModel, modelName: string): Promise<ActiveRun> => {
    const [stored, systemPrompt] = await Promise.all([
      storedConversation(),
      // The prompt reads the group's memory, which the stored conversation does not hold.
      waiting.then(
        (w) => systemPromptFor(params, w.workspace, settings, deps.now()),
        () => undefined,
      ),
    ]);
    const { workspace, history, conversation } = stored;
    const fresh = freshMessages(conversation, params.messages);
    let storing: Promise<void> = Promise.resolve();
    if (fresh.length > 0) {
      const turn = render(params, fresh);
      storing = history.append([turn]);
      conversation.push(turn);
    }
    storing.catch(() => undefined);
    return {
      params,
      model,
      modelName,
      workspace,
      history,
      conversation,
      stored: storing,
      systemPrompt: systemPrompt ?? (await systemPromptFor(params, workspace, settings, deps.now())),
      inbox: createInbox(),
      abort: new AbortController(),
      seenChatId: maxChatId(conversation),
    };
  };

  const execute = async (active: ActiveRun): Promise<void> => {
    const code = await executeRun(active, {
      host: deps.host,
      classifier: deps.classifier,
      commands: deps.commands,
      ripgrep: deps.ripgrep,
      settings,
      logger,
      ...(deps.doneTimeoutMs !== undefined ? { doneTimeoutMs: deps.doneTimeoutMs } : {}),
      ...(deps.onCommandsStart ? { onCommandsStart: deps.onCommandsStart } : {}),
      render,
      toSpec,
      onLoopEnd: () => (phase = 'finished'),
    });
    resolveFinished(code);
    deps.exit(code);
  };

  const failStart = (error: unknown): never => {
    phase = 'finished';
    logger.error({ error: errorMessage(error) }, 'run could not be prepared');
    resolveFinished(1);
    // Let the error reply go out first.
    setImmediate(() => deps.exit(1));
    throw error;
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
        return failStart(error);
      }
      phase = 'running';
      const active = run;
      // The loop (and its first LLM request) starts now; the acknowledgement waits for the stored messages.
      setImmediate(() => void execute(active));
      try {
        await active.stored;
      } catch (error) {
        active.abort.abort(
          new RunAbortedError(`the start messages could not be stored: ${errorMessage(error)}`),
        );
        throw error;
      }
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
