/**
 * The agent's entry inside the container (`node /app/agent.mjs`): wiring only. stdout carries JSON-RPC
 * frames and nothing else; logs go to stderr. When stdin ends (the host is gone) the agent exits at once.
 */
import os from 'node:os';
import { format } from 'node:util';
import { parseAgentEnv } from './config/agent-env.ts';
import type { BashClassifier } from './gate/bash-classifier.ts';
import { loadBashClassifier } from './gate/load-classifier.ts';
import { createBashClassifier } from './bash-gate/classifier.ts';
import { createOpenAiChatModel } from './llm/openai-chat-model.ts';
import { createStderrLogger } from './logging/stderr-logger.ts';
import { agentMethods, hostMethods, type AgentMethods } from './protocol.ts';
import { createRpcPeer, type RpcHandlers } from './rpc/peer.ts';
import { createRunController } from './run/run-controller.ts';
import { createRipgrepLocator } from './tools/grep.ts';

// Anything a library prints must not corrupt the frame stream.
for (const method of ['log', 'info', 'debug'] as const) {
  console[method] = (...args: unknown[]) => void process.stderr.write(format(...args) + '\n');
}

const logger = createStderrLogger({ level: process.env.CARAPACE_LOG_LEVEL === 'debug' ? 'debug' : 'info' });

let exiting = false;
function exit(code: number): void {
  if (exiting) return;
  exiting = true;
  process.exitCode = code;
  // Flush the frames already written (run.done, a last error reply) before leaving.
  process.stdout.write('', () => process.exit(code));
  setTimeout(() => process.exit(code), 2000).unref();
}

/** How long after "agent ready" the bash parser starts loading (see main). */
const PARSER_LOAD_DELAY_MS = 250;

async function main(): Promise<void> {
  const env = parseAgentEnv(process.env);
  // Loaded a moment after the agent listens, not before: the host's run.start is answered at once, and the
  // bash tool awaits the parser. In a container started ahead of its run this happens while it waits; in one
  // started for its run, run.start is already in the pipe, and its first LLM request goes out before the
  // parser's wasm compiles (which would compete for the container's one CPU).
  const classifier = new Promise<BashClassifier>((resolve) =>
    setTimeout(
      () =>
        resolve(
          loadBashClassifier({
            create: (wasm) => createBashClassifier(wasm),
            scriptUrl: import.meta.url,
            wasmDir: env.CARAPACE_WASM_DIR,
            logger,
          }),
        ),
      PARSER_LOAD_DELAY_MS,
    ),
  );
  // Node loads its fetch implementation on first use (tens of milliseconds); a data: URL loads it after
  // the agent listens, while it waits for run.start, without touching the network.
  setImmediate(() => void fetch('data:,').catch(() => undefined));

  // The peer looks handlers up per call, so the controller (which needs the peer) fills them in after.
  const handlers = {} as RpcHandlers<AgentMethods>;
  const peer = createRpcPeer({
    input: process.stdin,
    output: process.stdout,
    localMethods: agentMethods,
    remoteMethods: hostMethods,
    handlers,
    logger,
    onClose: (reason) => {
      // No agent runs unsupervised.
      logger.warn({ reason }, 'connection to the host closed; exiting');
      // Running commands live in their own process groups and would outlive us: kill them first.
      controller.abort(`the host is gone: ${reason}`);
      exit(2);
    },
  });
  const controller = createRunController({
    host: peer,
    // The key arrives with run.start and stays in this client: never in process.env, so no command and no
    // child process can inherit it.
    createModel: (gatewayKey) => createOpenAiChatModel({ baseURL: env.OPENAI_BASE_URL, apiKey: gatewayKey }),
    classifier,
    settings: {
      workspaceRoot: env.CARAPACE_WORKSPACE,
      ...(env.CARAPACE_MODEL ? { defaultModel: env.CARAPACE_MODEL } : {}),
      bashGateOnError: env.CARAPACE_BASH_GATE_ON_ERROR,
      bashCheckTimeoutMs: env.CARAPACE_BASH_CHECK_TIMEOUT_MS,
      historyTokens: env.CARAPACE_HISTORY_TOKENS,
      commandHome: process.env.HOME && process.env.HOME !== '/' ? process.env.HOME : os.tmpdir(),
      processEnv: process.env,
    },
    now: () => new Date(),
    logger,
    exit,
    ripgrep: createRipgrepLocator(),
  });
  Object.assign(handlers, controller.handlers);
  logger.info({ workspace: env.CARAPACE_WORKSPACE }, 'agent ready');
}

process.on('unhandledRejection', (error) => {
  logger.error({ error: error instanceof Error ? error.message : String(error) }, 'unhandled rejection');
  exit(1);
});

main().catch((error: unknown) => {
  logger.error(
    { error: error instanceof Error ? error.message : String(error) },
    'the agent could not start',
  );
  exit(1);
});
