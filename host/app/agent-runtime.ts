import crypto from 'node:crypto';
import path from 'node:path';
import type Docker from 'dockerode';
import type { Logger } from '../logging/logger.ts';
import type { HostConfig } from '../config/schema.ts';
import { outboxFilesDir, type CarapacePaths } from '../config/paths.ts';
import { createGateway, PROVIDER_DEFAULTS, type CredentialRouteDeps, type Review } from '../gateway/index.ts';
import { credentialCommandSetup } from '../gateway/credential/command-setup.ts';
import { createCredentialStatusBook } from '../gateway/credential/credential-status.ts';
import { createOutboundFiles } from '../router/media/outbound-file.ts';
import { CONTAINER_GROUP_DIR } from '../containers/mounts/group-mounts.ts';
import { createSqliteUsageStore } from '../gateway/spend/usage-store-sqlite.ts';
import type { NewOutboxItem } from '../store/outbox-store.ts';
import type { RunnerRuntime } from './host.ts';
import { auditProtocolProblem } from '../ipc/audit-protocol-problem.ts';
import { createHostHandlers, type HostHandlerDeps } from '../ipc/host-handlers.ts';
import type { Scheduler } from '../scheduler/scheduler.ts';
import type { TaintRegistry } from '../security/taint/taint.ts';
import type { ServiceTool } from '../../container-agent/src/protocol.ts';
import type { GroupRecord } from '../store/groups-store.ts';
import { createTaskHandlers } from '../scheduler/task-handlers.ts';
import type { RunContext } from '../router/agent-runner.ts';
import type { FinalFailures } from '../router/final-failures.ts';
import { gatewayEvents } from '../router/gateway-events.ts';
import { createUnavailableRunner } from '../router/unavailable-runner.ts';
import type { Store } from '../store/store.ts';
import { dataFolderLabel, gatewayNetworkName, LABEL_DATA } from '../containers/run/data-folder-label.ts';
import { createCloserStack, type CloserStack } from './closer-stack.ts';
import { removeOrphans } from '../containers/run/container-orphans.ts';
import { createDockerAgentRunner, type RunNetworks } from '../containers/run/docker-agent-runner.ts';
import { planGroupMounts } from '../containers/mounts/group-mounts.ts';
import { stopBundler } from '../containers/image/agent-bundle.ts';
import { ensureAgentImage } from '../containers/image/image-ensure.ts';
import { loadMountAllowlist } from '../containers/mounts/mount-allowlist.ts';
import { createShadowWalkCache } from '../containers/mounts/shadow-walk-cache.ts';
import { LABEL_DATA_DIR, removeGatewayNetwork } from '../containers/run/docker-leftovers.ts';
import { applyGatewayFirewall } from '../containers/network/network-host-firewall.ts';
import { defaultBridgeAddress, ensureGatewayNetwork } from '../containers/network/network-gateway.ts';
import { errorMessage } from '../errors/error-message.ts';
import { createMemoryHandlers } from '../memory/memory-handlers.ts';
import { createMemoryNotes } from '../memory/memory-notes.ts';
import { systemClock } from '../time/clock.ts';

/** The security decisions the runtime delegates (the security subsystem implements them). */
export type RunPolicy = Pick<
  HostHandlerDeps,
  'bashCheck' | 'bashRan' | 'fileRead' | 'callService' | 'reviewMessage' | 'reviewMutation' | 'config'
>;

export interface AgentRuntimeDeps {
  docker: Docker;
  /** This host's containers carry it (the MCP servers' too, started before the runtime); made here when absent. */
  hostInstanceId?: string;
  config: HostConfig;
  /** The configuration running now: what applies without a restart is read from it at each run or request. */
  live: () => HostConfig;
  paths: CarapacePaths;
  /** This checkout: the agent's source, bundled into the image. */
  projectRoot: string;
  /** The project the admin group sees read-only (default: `projectRoot`). */
  adminProject?: string;
  store: Store;
  /** The real provider key (empty for keyless local servers); lives only in host memory. */
  providerApiKey: string | undefined;
  /** Secret lookup by variable name (a local transcription server's key). */
  secret?: (name: string) => string | undefined;
  policy: RunPolicy;
  /** What each run has read; tool results with strangers' text add to it. */
  taint: Pick<TaintRegistry, 'get' | 'markCorrupted' | 'markSecret'>;
  scheduler: Scheduler;
  /** Stores a host notice in the outbox and wakes its delivery. */
  enqueueNotice(item: NewOutboxItem): void;
  /** A notice for the owner in every admin chat (or those `[admin] notify` names). */
  notifyOwner(key: string, text: string): void;
  /** Releases what the security layer holds for a run (its taint, its pending approvals). */
  onRunEnded(runId: number): void;
  /** What makes a run's failure final (a denied message, a provider that refuses the key). */
  finalFailures: FinalFailures;
  /** Channel formatting rules for the agent's prompt, by channel name. */
  formattingFor(channel: string): string;
  /** The tools of the host's MCP servers a group's run is offered (listed as the container starts). */
  serviceToolsFor?(group: GroupRecord): Promise<ServiceTool[]>;
  /** Throws, saying why, when a group cannot be registered on that channel and chat (register_group). */
  checkRegistration(channel: string, chatId: string): void;
  /** Image build progress, for the person waiting at the terminal. */
  onProgress(line: string): void;
  /** The credential routes' decisions and the values behind `value_env` (the gateway serves the routes). */
  credentials?: {
    policy: Pick<CredentialRouteDeps, 'gate' | 'record' | 'signalFor'>;
    secret(envName: string): string | undefined;
  };
  logger: Logger;
}

/** The runtime, and the Cop's way to the provider: through its gateway (absent when nothing runs). */
export interface AgentRuntime extends RunnerRuntime {
  review?: Review;
}

/** Groups with a run within the last `withinMs`, most recent first: their next run is likely soon. */
function recentlyActiveGroups(store: Store, withinMs: number) {
  const since = Date.now() - withinMs;
  const ids = new Set<string>();
  for (const run of store.runs.recent(100)) if (Date.parse(run.startedAt) >= since) ids.add(run.groupId);
  return [...ids].flatMap((id) => store.groups.get(id) ?? []);
}

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
  try {
    await docker.ping();
  } catch (err) {
    logger.error({ err: errorMessage(err) }, 'no Docker engine answers');
    return noticeRuntime(
      `no Docker engine answers (${errorMessage(err)}); start Docker and restart Carapace (carapace doctor says more)`,
    );
  }

  // Anything that fails from here on becomes a notice to the group instead of a host that cannot start,
  // and never leaves the gateway's listeners, the network or a warmed container behind.
  const closers = createCloserStack();
  try {
    return await startContainerRuntime(deps, closers);
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

  const credentialBook = createCredentialStatusBook(systemClock);
  const gateway = createGateway({
    config: () => deps.live().gateway,
    provider: config.provider,
    providerApiKey: deps.providerApiKey ?? '',
    usageStore: createSqliteUsageStore(store.db),
    // Read at each request: a reloaded grant or allowlist applies to the next one.
    ...(deps.credentials
      ? {
          credentials: {
            ...deps.credentials.policy,
            record: (owner, row) => {
              // What status shows: the upstream's last answer (0: not reached), not the host's own refusals.
              if (row.refused === undefined) credentialBook.note(row.credential, row.status);
              else if (row.status === 502) credentialBook.note(row.credential, 0);
              deps.credentials?.policy.record(owner, row);
            },
            credentials: () => deps.live().credentials,
            grantedTo: (groupId: string) => deps.live().groups[groupId]?.credentials ?? [],
            secret: deps.credentials.secret,
          },
        }
      : {}),
    clock: systemClock,
    timezone: () => deps.live().assistant.timezone,
    logger: logger.child({ subsystem: 'gateway' }),
    maxOutputTokens: config.runs.max_output_tokens,
    transcription: () => deps.live().media.transcription,
    // The Cop's reviews are spent here too, charged to the reviewed run's group (security applies at restart).
    review: {
      model: config.security.cop.model ?? config.provider.model,
      max_output_tokens: config.security.cop.max_output_tokens,
      max_reviews_per_run: config.security.cop.max_reviews_per_run,
    },
    ...(deps.secret ? { secret: deps.secret } : {}),
    ...gatewayEvents({
      store,
      finalFailures: deps.finalFailures,
      enqueueNotice: deps.enqueueNotice,
      notifyOwner: deps.notifyOwner,
    }),
  });

  closers.push('LLM gateway', () => gateway.close());
  const bridge = await defaultBridgeAddress(docker);
  const networks: RunNetworks = { full: { hostAddress: bridge }, gateway: { unavailable: 'not set up yet' } };
  const addresses = ['127.0.0.1', bridge];
  let gatewayNet: { networkName: string; hostAddress: string } | undefined;
  try {
    // One network per data folder: its firewall chain allows only this host's gateway port, so a second
    // host sharing the network would cut the first one's containers off.
    gatewayNet = await ensureGatewayNetwork(
      docker,
      gatewayNetworkName(config.containers.gateway_network, paths.dataDir),
      { [LABEL_DATA]: dataLabel, [LABEL_DATA_DIR]: paths.dataDir },
    );
    // Made at each start, so removed at each stop: nothing of this host stays in Docker or iptables.
    const name = gatewayNet.networkName;
    closers.push('gateway network', () => removeGatewayNetwork(docker, name, hostInstanceId));
    addresses.push(gatewayNet.hostAddress);
  } catch (err) {
    networks.gateway = {
      unavailable: `the isolated "gateway" network could not be created: ${errorMessage(err)}`,
    };
  }
  await gateway.listen(addresses);
  if (gatewayNet) {
    const firewall = await applyGatewayFirewall(docker, {
      networkName: gatewayNet.networkName,
      hostAddress: gatewayNet.hostAddress,
      allowTcpPorts: [gateway.port as number],
    });
    if (firewall.applied) networks.gateway = gatewayNet;
    else {
      // Without the rules a "gateway" container could reach every service on the host: fail closed.
      networks.gateway = {
        unavailable:
          `groups in "gateway" network mode cannot run: their isolation rules are not in place (${firewall.reason ?? 'unknown'}). ` +
          // The rules name the gateway's port, which is chosen at each start: only the host can keep
          // them right, so the fix is to run it as root (or give such groups network mode "full").
          'Run Carapace as root, or give such groups network mode "full" (carapace groups add … --network full)',
      };
      logger.error(
        { reason: firewall.reason },
        'gateway network firewall not applied; gateway-mode groups will not run',
      );
    }
  }

  // Lives as long as the host: every run plans its mounts, and an unchanged project tree is then only stat'ed.
  const walkCache = createShadowWalkCache();
  const outboundFiles = createOutboundFiles({
    groupDir: (groupId) => path.join(paths.groupsDir, groupId),
    containerGroupDir: CONTAINER_GROUP_DIR,
    maxBytes: () => deps.live().media.max_send_bytes,
    stagingDir: outboxFilesDir(paths),
  });
  const memoryNotes = createMemoryNotes({
    memory: store.memory,
    groupDir: (groupId) => path.join(paths.groupsDir, groupId),
  });
  const runner = createDockerAgentRunner({
    docker,
    image,
    hostInstanceId,
    labels: { [LABEL_DATA]: dataLabel, [LABEL_DATA_DIR]: paths.dataDir },
    nameScope: dataLabel.slice(0, 8),
    containers: config.containers,
    prestart: {
      count: config.runs.prestart.count,
      memoryMb: config.runs.prestart.memory_mb,
      idleMs: config.runs.prestart.idle_ms,
    },
    networks,
    gateway,
    commandSetup: (group, routesUrl, credentialKey) =>
      credentialCommandSetup(deps.live().credentials, deps.live().groups[group.id], routesUrl, credentialKey),
    groupById: (id) => store.groups.get(id),
    planMounts: (group) =>
      planGroupMounts({
        dataDir: paths.dataDir,
        projectRoot: deps.adminProject ?? deps.projectRoot,
        configDir: paths.configDir,
        group: {
          id: group.id,
          isAdmin: group.isAdmin,
          extraMounts: deps.live().groups[group.id]?.extra_mounts ?? [],
        },
        allowlistResult: loadMountAllowlist(paths.configDir),
        assistantName: deps.live().assistant.name,
        walkCache,
        foldersOthersWrite: Object.entries(deps.live().groups)
          .filter(([id]) => id !== group.id)
          .flatMap(([, g]) => g.extra_mounts.filter((m) => m.read_write).map((m) => m.host_path)),
      }),
    maxImageBytes: () => (deps.live().media.model_sees_images ? deps.live().media.max_image_bytes : 0),
    startParams: async (ctx: RunContext) => ({
      ...(deps.serviceToolsFor ? { serviceTools: await deps.serviceToolsFor(ctx.group) } : {}),
      assistantName: deps.live().assistant.name,
      timezone: deps.live().assistant.timezone,
      formatting: deps.formattingFor(ctx.group.channel),
      limits: {
        maxToolSteps: deps.live().runs.max_tool_steps,
        maxOutputTokens: config.runs.max_output_tokens,
        wallTimeMs: deps.live().runs.wall_time_ms,
      },
      model: config.provider.model,
    }),
    env: () => ({
      TZ: deps.live().assistant.timezone,
      CARAPACE_MODEL: config.provider.model,
      // The agent waits for the host's bash decision at least as long as the owner may take to approve.
      CARAPACE_BASH_CHECK_TIMEOUT_MS: String(config.security.approval_timeout_ms + 30_000),
    }),
    handlersFor: (identity, callbacks, onDone, stopRun) =>
      createHostHandlers({
        identity,
        callbacks,
        groups: store.groups,
        audit: store.audit,
        onDone,
        checkRegistration: deps.checkRegistration,
        stopRun,
        ...deps.policy,
        taint: deps.taint,
        outboundFiles,
        memory: createMemoryHandlers({
          identity,
          memory: store.memory,
          notes: memoryNotes,
          taint: deps.taint,
          audit: store.audit,
        }),
        tasks: createTaskHandlers({
          identity,
          tasks: store.tasks,
          groups: store.groups,
          scheduler: deps.scheduler,
          timezone: deps.live().assistant.timezone,
          reviewMutation: deps.policy.reviewMutation,
          taint: deps.taint,
          audit: store.audit,
          notifyOwner: deps.notifyOwner,
          maxTasksPerGroup: config.scheduler.max_tasks_per_group,
        }),
      }),
    onProtocolProblem: (identity, problem) => auditProtocolProblem(store.audit, identity, problem),
    onRunEnded: deps.onRunEnded,
    settleOutcome: (runId, outcome) => deps.finalFailures.settle(runId, outcome),
    hostIds: { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 },
    logger: logger.child({ subsystem: 'containers' }),
  });
  closers.push('agent containers', () => runner.close());
  logger.info({ image, gateway: gateway.port, addresses }, 'agent runtime ready');
  for (const group of recentlyActiveGroups(store, config.runs.prestart.idle_ms)) runner.warm(group);
  return {
    runner,
    credentials: {
      status: () =>
        credentialBook.status(
          deps.live().credentials,
          deps.live().groups,
          (name) => deps.credentials?.secret(name) !== undefined,
        ),
    },
    transcribe: gateway.transcribe,
    review: gateway.review,
    prestart: {
      status: () => {
        const { budget, containers } = runner.prestartStatus();
        return {
          count: budget.count,
          memoryMb: budget.memoryMb,
          idleMs: budget.idleMs,
          containers: containers.map((c) => ({
            groupId: c.groupId,
            memoryMb: c.memoryBytes === undefined ? null : c.memoryBytes / (1024 * 1024),
          })),
        };
      },
      refresh: () => runner.refresh(),
    },
    close: async () => {
      const failures = await closers.closeAll('host stopping');
      // The host logs a runtime that did not close; the first failure says what was left behind.
      if (failures[0]) throw new Error(`could not close ${failures[0].name}`, { cause: failures[0].error });
    },
  };
}
