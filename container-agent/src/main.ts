/**
 * The agent's entry inside the container: wiring only. stdout carries JSON-RPC frames and nothing else;
 * logs go to stderr. When stdin ends (the host is gone) the agent exits at once.
 *
 * Boot is kept to what reading run.start needs (the environment, the RPC peer and the protocol's schemas):
 * "agent ready" comes first, and the run controller with its tools and LLM client loads right after
 * (run/controller-wiring.ts). Handlers that arrive before it wait for it.
 */
import { format } from 'node:util';
import * as z from 'zod/mini';
import { en } from 'zod/locales';
import { parseAgentEnv } from './config/agent-env.ts';
import { createStderrLogger } from './logging/stderr-logger.ts';
import { agentMethods, hostMethods, type AgentMethods } from './protocol.ts';
import { createRpcPeer, type RpcHandlers } from './rpc/peer.ts';
import type { RunController } from './run/run-controller.ts';
import { errorMessage } from './rpc/errors.ts';

// Anything a library prints must not corrupt the frame stream.
for (const method of ['log', 'info', 'debug'] as const) {
  console[method] = (...args: unknown[]) => void process.stderr.write(format(...args) + '\n');
}
// zod's functional API loads no messages of its own; a frame the host gets refused says why in English.
z.config(en());

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

function main(): void {
  const env = parseAgentEnv(process.env);
  let controller: RunController | undefined;
  // The peer looks handlers up per call: until the controller is loaded, each waits for it.
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
      controller?.abort(`the host is gone: ${reason}`);
      exit(2);
    },
  });
  // Loaded once "agent ready" is out (a macrotask later), not on the way to it.
  const loaded = new Promise((resolve) => setImmediate(resolve))
    .then(() => import('./run/controller-wiring.ts'))
    .then(({ wireRunController }) => {
      controller = wireRunController({ env, host: peer, logger, exit, scriptUrl: import.meta.url });
      Object.assign(handlers, controller.handlers);
      return controller;
    });
  loaded.catch((error: unknown) => {
    logger.error({ error: errorMessage(error) }, 'the agent could not load its run controller');
    exit(1);
  });
  Object.assign(handlers, {
    'run.start': async (params, context) => (await loaded).handlers['run.start'](params, context),
    'run.input': async (params, context) => (await loaded).handlers['run.input'](params, context),
    'run.stop': async (params, context) => (await loaded).handlers['run.stop'](params, context),
  } satisfies RpcHandlers<AgentMethods>);
  logger.info({ workspace: env.CARAPACE_WORKSPACE }, 'agent ready');
}

process.on('unhandledRejection', (error) => {
  logger.error({ error: errorMessage(error) }, 'unhandled rejection');
  exit(1);
});

try {
  main();
} catch (error: unknown) {
  logger.error({ error: errorMessage(error) }, 'the agent could not start');
  exit(1);
}
