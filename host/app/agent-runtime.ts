import crypto from 'node:crypto';
import path from 'node:path';
import type { HostConfig } from '../config/schema.ts';
import { PROVIDER_DEFAULTS } from '../gateway/index.ts';
import type { RunnerRuntime } from './host.ts';
import { createUnavailableRunner } from '../router/unavailable-runner.ts';
import { dataFolderLabel, LABEL_DATA } from '../containers/run/data-folder-label.ts';
import { createCloserStack, type CloserStack } from './closer-stack.ts';
import type { AgentRuntime, AgentRuntimeDeps } from './agent-runtime-deps.ts';
import { startRuntimeGateway } from './runtime-gateway.ts';
import { createAgentRunner, prestartStatusOf } from './agent-runner.ts';
import { setUpRunNetworks } from '../containers/network/run-networks.ts';
import { removeOrphans } from '../containers/run/container-orphans.ts';
import { stopBundler } from '../containers/image/agent-bundle.ts';
import { ensureAgentImage } from '../containers/image/image-ensure.ts';
import { errorMessage } from '../errors/error-message.ts';
import { recentlyActiveGroups } from './recent-groups.ts';

export type { AgentRuntime, AgentRuntimeDeps } from './agent-runtime-deps.ts';

/** A runner that answers with host notices instead of running agents (nothing to run them with). */
function noticeRuntime(reason: string): RunnerRuntime {
  return { runner: createUnavailableRunner(reason), close: async () => undefined };
}

export function providerConfigured(config: HostConfig, apiKey: string | undefined): boolean {
  // A keyless provider is fine when the owner pointed base_url somewhere of their own (Ollama, vLLM).
  return !!apiKey || config.provider.base_url !== PROVIDER_DEFAULTS[config.provider.kind].base_url;
}

/**
 * Everything agent runs need, brought up in order: provider settings, the Docker engine, orphans of an
 * earlier host, the agent image, the networks, the LLM gateway and the gateway network's firewall.
 * Anything missing turns into a runner that tells the group what to fix, so the host still starts.
 */
export async function createAgentRuntime(deps: AgentRuntimeDeps): Promise<AgentRuntime> {
  const { docker, config, paths, logger } = deps;
  if (!providerConfigured(config, deps.providerApiKey)) {
    const env = config.provider.api_key_env;
    return noticeRuntime(
      `no LLM provider is configured. Put ${env}=<your key> in ${paths.envFile} (or the environment), ` +
        `or set [provider] base_url in ${paths.configFile} to a local server such as http://localhost:11434/v1, then restart Carapace`,
    );
  }
  if (config.runner.kind === 'kubernetes') {
    // Loaded only for this runner: the Kubernetes client alone took 3 to 5 s of a loaded machine's start-up
    // (and of every test file that starts a host) for owners who run Docker.
    const { startKubernetesRuntime } = await import('./kubernetes-runtime.ts');
    return startRuntimeWith(deps, startKubernetesRuntime);
  }
  try {
    await docker.ping();
  } catch (err) {
    logger.error({ err: errorMessage(err) }, 'no Docker engine answers');
    return noticeRuntime(
      `no Docker engine answers (${errorMessage(err)}); start Docker and restart Carapace (carapace doctor says more)`,
    );
  }

  return startRuntimeWith(deps, startContainerRuntime);
}

/**
 * Anything that fails from here on becomes a notice to the group instead of a host that cannot start, and
 * never leaves the gateway's listeners, the network, a warmed container or a pod behind.
 */
async function startRuntimeWith(
  deps: AgentRuntimeDeps,
  start: (deps: AgentRuntimeDeps, closers: CloserStack) => Promise<AgentRuntime>,
): Promise<AgentRuntime> {
  const { logger } = deps;
  const closers = createCloserStack();
  try {
    return await start(deps, closers);
  } catch (err) {
    const failures = await closers.closeAll('the agent runtime could not start');
    for (const f of failures)
      logger.error({ err: f.error, part: f.name }, 'could not close after a failed start');
    logger.error({ err }, 'the agent runtime could not start');
    return noticeRuntime(
      `agent containers could not be set up: ${errorMessage(err)} (carapace doctor says more)`,
    );
  }
}

async function startContainerRuntime(deps: AgentRuntimeDeps, closers: CloserStack): Promise<AgentRuntime> {
  const { docker, config, paths, store, logger } = deps;
  const hostInstanceId = deps.hostInstanceId ?? crypto.randomUUID();
  const dataLabel = dataFolderLabel(paths.dataDir);
  const removed = await removeOrphans(docker, {
    exceptHostInstanceId: hostInstanceId,
    onlyWithLabels: { [LABEL_DATA]: dataLabel },
  });
  if (removed > 0) logger.warn({ removed }, 'removed agent containers left by an earlier host process');

  let image: string;
  try {
    image = (
      await ensureAgentImage({
        docker,
        projectRoot: deps.projectRoot,
        mode: config.containers.image_build,
        keep: config.containers.keep_images,
        onProgress: deps.onProgress,
        // In the owner's own data folder, not a shared /tmp where another user could hold it.
        lockFile: path.join(paths.dataDir, 'image-build.lock'),
      })
    ).tag;
  } catch (err) {
    logger.error({ err }, 'the agent image could not be built');
    return noticeRuntime(`the agent image could not be built: ${errorMessage(err)}`);
  } finally {
    // The bundle is made once per start: esbuild's helper process has nothing left to do in this host.
    await stopBundler();
  }

  const { gateway, parts } = startRuntimeGateway(deps, closers);
  const { networks, addresses } = await setUpRunNetworks({
    docker,
    gateway,
    configuredName: config.containers.gateway_network,
    dataDir: paths.dataDir,
    dataLabel,
    hostInstanceId,
    onNetwork: (name, remove) => closers.push(name, remove),
    logger,
  });
  const runner = createAgentRunner(deps, { image, hostInstanceId, dataLabel, networks, gateway });
  closers.push('agent containers', () => runner.close());
  logger.info({ image, gateway: gateway.port, addresses }, 'agent runtime ready');
  for (const group of recentlyActiveGroups(store, config.runs.prestart.idle_ms)) runner.warm(group);
  return {
    runner,
    ...parts,
    prestart: {
      status: () => prestartStatusOf(runner),
      refresh: () => runner.refresh(),
    },
  };
}
