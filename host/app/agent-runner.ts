import path from 'node:path';
import { groupDefaults } from '../config/group-defaults.ts';
import { outboxFilesDir } from '../config/paths.ts';
import { credentialCommandSetup } from '../gateway/credential/command-setup.ts';
import { createOutboundFiles } from '../router/media/outbound-file.ts';
import { CONTAINER_GROUP_DIR, planGroupMounts } from '../containers/mounts/group-mounts.ts';
import { loadMountAllowlist } from '../containers/mounts/mount-allowlist.ts';
import { createShadowWalkCache } from '../containers/mounts/shadow-walk-cache.ts';
import { createTreeWatch } from '../containers/mounts/tree-watch.ts';
import { LABEL_DATA } from '../containers/run/data-folder-label.ts';
import { createDockerAgentRunner, type RunNetworks } from '../containers/run/docker-agent-runner.ts';
import { LABEL_DATA_DIR } from '../containers/run/docker-leftovers.ts';
import { auditProtocolProblem } from '../ipc/audit-protocol-problem.ts';
import { createHostHandlers } from '../ipc/host-handlers.ts';
import { createMemoryHandlers } from '../memory/memory-handlers.ts';
import { createMemoryNotes } from '../memory/memory-notes.ts';
import type { RunContext } from '../router/agent-runner.ts';
import { createTaskHandlers } from '../scheduler/task-handlers.ts';
import type { PrestartStatus } from '../channels/local/local-api.ts';
import type { AgentGateway } from './agent-gateway.ts';
import type { AgentRuntimeDeps } from './agent-runtime-deps.ts';
import type { RunWiring } from '../containers/run/run-opening.ts';

export interface AgentRunnerParts {
  image: string;
  hostInstanceId: string;
  dataLabel: string;
  networks: RunNetworks;
  gateway: AgentGateway;
}

/**
 * The Docker runner: each run's container (its mounts planned from the live config, its start parameters,
 * its environment) and the host's handlers of the agent's calls (messages, files, tasks, security).
 */
export function createAgentRunner(deps: AgentRuntimeDeps, parts: AgentRunnerParts) {
  const { docker, config, paths } = deps;
  const { image, hostInstanceId, dataLabel, networks, gateway } = parts;
  // Lives as long as the host: every run plans its mounts, and an unchanged project tree is then only stat'ed,
  // or, once its watches (a worker thread's inotify) have seen it unchanged, not even that.
  const walkCache = createShadowWalkCache({
    watch: createTreeWatch({ canaryDir: path.join(paths.dataDir, 'mount-shadow', 'watch-canary') }),
  });
  return createDockerAgentRunner({
    ...runWiringFor(deps, gateway),
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
    syncWalks: () => walkCache.sync(),
    closeWalks: () => walkCache.close(),
    planMounts: (group, walkSync) =>
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
        walkSync,
        foldersOthersWrite: Object.entries(deps.live().groups)
          .filter(([id]) => id !== group.id)
          .flatMap(([, g]) => g.extra_mounts.filter((m) => m.read_write).map((m) => m.host_path)),
      }),
    hostIds: { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 },
  });
}

/**
 * What a run needs from the host whatever runs it (run-opening.ts): its gateway key, start parameters and
 * environment, and the host's handlers of the agent's calls (messages, files, tasks, memory, security).
 */
export function runWiringFor(deps: AgentRuntimeDeps, gateway: AgentGateway): RunWiring {
  const { config, paths, store, logger } = deps;
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
  return {
    gateway,
    commandSetup: (group, routesUrl, credentialKey) =>
      credentialCommandSetup(
        deps.live().credentials,
        {
          ...deps.live().groups[group.id],
          credentials: groupDefaults(deps.live(), group).credentials.value,
        },
        routesUrl,
        credentialKey,
      ),
    groupById: (id) => store.groups.get(id),
    maxImageBytes: () => (deps.live().media.model_sees_images ? deps.live().media.max_image_bytes : 0),
    startParams: async (ctx: RunContext) => ({
      ...(deps.serviceToolsFor ? { serviceTools: await deps.serviceToolsFor(ctx.group) } : {}),
      assistantName: deps.live().assistant.name,
      timezone: deps.live().assistant.timezone,
      formatting: deps.formattingFor(ctx.group.channel),
      ...personaParam(groupDefaults(deps.live(), ctx.group).persona.value),
      limits: {
        maxToolSteps: deps.live().runs.max_tool_steps,
        maxOutputTokens: config.runs.max_output_tokens,
        wallTimeMs: deps.live().runs.wall_time_ms,
      },
      model: config.provider.model,
      ...(ctx.drafts ? { drafts: true } : {}),
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
          containerGroupDir: CONTAINER_GROUP_DIR,
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
    logger: logger.child({ subsystem: 'containers' }),
  };
}

/** What `status` shows of the pre-started containers: the budget, and each container's group and memory. */
export function prestartStatusOf(
  runner: Pick<ReturnType<typeof createAgentRunner>, 'prestartStatus'>,
): PrestartStatus {
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
}

/** The persona a run's prompt carries, when its group has one (from its own table, its account or [assistant]). */
function personaParam(persona: string | undefined): { persona?: string } {
  return persona === undefined ? {} : { persona };
}
