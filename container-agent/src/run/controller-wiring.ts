/**
 * Everything a run needs beyond reading run.start: the run controller with its LLM client, tools and bash
 * parser. main.ts loads this module once the agent listens ("agent ready"), so it is not on the boot's
 * critical path: a container started ahead of its run loads it while it waits, and one started for its run
 * loads it while run.start is already in the pipe (DESIGN.md, Agent boot).
 */
import os from 'node:os';
import path from 'node:path';
import { createBashClassifier } from '../bash-gate/classifier.ts';
import { launcherCommands } from '../executor/command-runner.ts';
import type { AgentEnv } from '../config/agent-env.ts';
import type { BashClassifier } from '../bash-gate/fail-closed-classifier.ts';
import { loadBashClassifier } from '../bash-gate/load-classifier.ts';
import type { HostClient } from '../ipc/host-client.ts';
import { createImageReader } from '../llm/image-reader.ts';
import { createOpenAiChatModel } from '../llm/openai-chat-model.ts';
import type { AgentLogger } from '../logging/stderr-logger.ts';
import { createRipgrepLocator } from '../tools/grep.ts';
import { releaseIdleMemory } from './idle-memory.ts';
import { createRunController, type RunController } from './run-controller.ts';

/** How long after the stored conversation is loaded a waiting agent rehearses a run's start. */
const REHEARSAL_DELAY_MS = 100;

export interface ControllerWiringOptions {
  env: AgentEnv;
  host: HostClient;
  logger: AgentLogger;
  exit: (code: number) => void;
  /** The agent script's URL: the wasm files lie next to it. */
  scriptUrl: string;
}

export function wireRunController(options: ControllerWiringOptions): RunController {
  const { env, logger } = options;
  // The bash tool awaits the parser. It loads with the run's command side (run/command-start.ts): not while
  // the container waits (its compiled wasm and memory were ~11 MiB of every waiting container), not ahead of
  // a request on the container's CPU, and not on the way to a text answer. A bash command comes after it.
  let loadParser!: () => void;
  const classifier = new Promise<BashClassifier>((resolve) => {
    loadParser = () =>
      resolve(
        loadBashClassifier({
          create: (wasm) => createBashClassifier(wasm),
          scriptUrl: options.scriptUrl,
          wasmDir: env.CARAPACE_WASM_DIR,
          logger,
        }),
      );
  });
  const readImage = createImageReader(path.join(env.CARAPACE_WORKSPACE, 'group'));
  // The run's LLM client is built now, while the process waits, not at run.start: without its key, which
  // arrives with run.start and stays in this closure and the client: never in process.env, so no command
  // and no child process can inherit it. Asked for a key before that, the client fails its request.
  let gatewayKey: string | undefined;
  const runModel = createOpenAiChatModel({
    baseURL: env.OPENAI_BASE_URL,
    apiKey: () =>
      gatewayKey === undefined
        ? Promise.reject(new Error('the run has no gateway key before run.start'))
        : Promise.resolve(gatewayKey),
    readImage,
  });

  return createRunController({
    host: options.host,
    createModel: (key) => {
      gatewayKey = key;
      return runModel;
    },
    classifier,
    onCommandsStart: () => loadParser(),
    rehearsal: {
      createModel: (baseURL, apiKey) => createOpenAiChatModel({ baseURL, apiKey, maxRetries: 0, readImage }),
      delayMs: REHEARSAL_DELAY_MS,
      done: (result) => {
        // Only a waiting agent: one whose run already started keeps its memory warm.
        const released = result === 'done' ? releaseIdleMemory() : undefined;
        logger.info({ result, ...(released ? { gc: released } : {}) }, 'run start rehearsed');
      },
    },
    settings: {
      workspaceRoot: env.CARAPACE_WORKSPACE,
      ...(env.CARAPACE_MODEL ? { defaultModel: env.CARAPACE_MODEL } : {}),
      bashCheckTimeoutMs: env.CARAPACE_BASH_CHECK_TIMEOUT_MS,
      historyTokens: env.CARAPACE_HISTORY_TOKENS,
      commandHome: process.env.HOME && process.env.HOME !== '/' ? process.env.HOME : os.tmpdir(),
      processEnv: process.env,
    },
    now: () => new Date(),
    logger,
    exit: options.exit,
    ripgrep: createRipgrepLocator(),
    commands: launcherCommands(path.join(env.CARAPACE_WORKSPACE, 'session')),
  });
}
