import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type Docker from 'dockerode';
import type { AgentRunner, RunCallbacks, RunContext, RunHandle } from '../../router/agent-runner.ts';
import type { ContainersConfig } from './container-config.ts';
import { launchContainer } from './container-launch.ts';
import {
  createRetiring,
  openRun,
  runHandleOf,
  runIdentityOf,
  type LaunchedRun,
  type RunWiring,
} from './run-opening.ts';
import { containerMemoryBytes } from './container-memory.ts';
import { LABEL_PRESTARTED, type ContainerSpec } from './container-spec.ts';
import {
  createPrestartPool,
  refreshPrestarted,
  type PrestartBudget,
  type PrestartPool,
} from './prestart-pool.ts';
import { quotaFolders } from '../mounts/disk-quota-folders.ts';
import { watchDiskQuota } from '../mounts/disk-quota.ts';
import { isGuardedPathError } from '../../safe-fs/guarded-path-error.ts';
import { openGuardedRootSync } from '../../safe-fs/guarded-root.ts';
import { AGENT_UID, AGENT_USER } from '../image/image-base-offline.ts';
import type { GroupMountPlan } from '../mounts/group-mounts.ts';
import type { WalkSync } from '../mounts/tree-watch.ts';

/** Where a container reaches the host, per network mode. */
export interface RunNetworks {
  full: { hostAddress: string };
  gateway: { networkName: string; hostAddress: string } | { unavailable: string };
}

export interface DockerAgentRunnerDeps extends RunWiring {
  docker: Docker;
  image: string;
  hostInstanceId: string;
  /** Extra labels on every container (the data folder's identity, so orphan cleanup stays in its lane). */
  labels: Record<string, string>;
  /** The data folder's short id, part of every container name. */
  nameScope: string;
  containers: ContainersConfig;
  /** Pre-started containers: how many, how much memory, how long one may wait for a run. */
  prestart: PrestartBudget;
  networks: RunNetworks;
  /** `walkSync` is a `syncWalks()` taken just before the plan, never an older one. */
  planMounts(group: RunContext['group'], walkSync?: WalkSync): GroupMountPlan;
  /**
   * Waits until every change to the watched mounted trees is counted, so that the plan right after it
   * may trust an unchanged tree without walking it (shadow-walk-cache.ts); undefined walks them.
   */
  syncWalks?(): Promise<WalkSync | undefined>;
  /** Ends what `syncWalks` needs (the watching worker), at close. */
  closeWalks?(): Promise<void>;
  /** The uid/gid of the host process; root hands the group folders to the agent user instead. */
  hostIds: { uid: number; gid: number };
}

export interface PrestartStatus {
  budget: PrestartBudget;
  containers: ReturnType<PrestartPool<RunContext['group']>['snapshot']>;
}

/**
 * The agent runs as uid 10001 in the image. A root host hands it the folders it writes; any other host
 * cannot chown, so it runs the agent under its own ids (never root) instead. Commands run under another
 * uid with the agent's gid (commandUser), so the group folder is group-writable (both sides run with umask
 * 002): what commands write stays usable by the agent and by the owner's group. The session folder is not
 * shared: it is the agent's alone.
 */
function prepareOwnership(
  plan: GroupMountPlan,
  hostIds: DockerAgentRunnerDeps['hostIds'],
): string | undefined {
  const root = hostIds.uid === 0;
  for (const m of plan.mounts) {
    if (m.readOnly || (m.kind !== 'group' && m.kind !== 'session')) continue;
    if (root) fs.chownSync(m.hostPath, AGENT_UID, AGENT_UID);
    if (m.kind === 'group') fs.chmodSync(m.hostPath, fs.statSync(m.hostPath).mode | GROUP_WRITABLE);
    // The session folder is the agent's alone (its conversation; commands share its gid): the agent
    // narrows it too, and its separation check refuses commands until it is so.
    if (m.kind === 'session') fs.chmodSync(m.hostPath, PRIVATE_FOLDER);
    if (!root) continue;
    // Through the guarded root: a running container of the group may swap a file for a symlink between
    // a look and a chmod by name, and a root host would then make a host file group-writable.
    const folder = openGuardedRootSync(m.hostPath);
    for (const entry of folder.readDirSync('')) {
      // Only what the host itself creates (AGENT.md); files the agent made are its own already.
      if (!entry.isFile()) continue;
      try {
        folder.withFileSync(entry.name, (fd, stat) => {
          if (stat.uid !== 0) return;
          fs.fchownSync(fd, AGENT_UID, AGENT_UID);
          if (m.kind === 'group') fs.fchmodSync(fd, stat.mode | GROUP_WRITABLE);
        });
      } catch (error) {
        if (!isGuardedPathError(error)) throw error; // swapped or linked meanwhile: not the host's file
      }
    }
  }
  return root ? AGENT_USER : `${hostIds.uid}:${hostIds.gid}`;
}

const GROUP_WRITABLE = 0o020;
const PRIVATE_FOLDER = 0o700;

export interface DockerAgentRunner extends AgentRunner {
  /** Pre-starts the group's next container when the pre-start budget allows. */
  warm(group: RunContext['group']): void;
  /** What is pre-started now (group, container, measured memory). */
  prestarted(): ReturnType<PrestartPool<RunContext['group']>['snapshot']>;
  /** The pre-start budget and what is pre-started now, for `carapace status`. */
  prestartStatus(): PrestartStatus;
  /**
   * Stops, at once, each pre-started container whose group was removed or whose container would now be
   * made differently (its mounts, network or settings changed), and pre-starts the changed groups' anew.
   * Called when groups or their configuration change; a stale one would otherwise wait out idle_ms.
   */
  refresh(): void;
  /** Stops the pre-started containers and waits for finished runs' containers to be gone; runs in flight are the router's to stop. */
  close(): Promise<void>;
}

/**
 * Runs every agent turn in a fresh, hardened container that speaks the IPC protocol on its stdio. With a
 * pre-start budget, a group's next container is created and booted ahead of its run, so a message only
 * has to send run.start; it is still a new container for every run.
 */
export function createDockerAgentRunner(deps: DockerAgentRunnerDeps): DockerAgentRunner {
  const { docker, containers, logger } = deps;

  const containerFor = (group: RunContext['group'], walkSync?: WalkSync) =>
    agentContainerFor(deps, group, walkSync);
  const syncWalks = () => deps.syncWalks?.() ?? Promise.resolve(undefined);

  const pool = createPrestartPool<RunContext['group']>({
    budget: deps.prestart,
    launch: async (group) => {
      const { spec } = containerFor(group, await syncWalks());
      // Named apart from run containers: its run id is not known yet.
      const runId = `pre-${randomBytes(4).toString('hex')}`;
      const container = await launchContainer(
        docker,
        { ...spec, runId, labels: { ...spec.labels, [LABEL_PRESTARTED]: '1' } },
        { deferTimeouts: true },
      );
      return { container, fingerprint: fingerprintOf(spec) };
    },
    measure: (container) => containerMemoryBytes(docker, container.id),
    logger,
  });

  // A finished run's container is stopped and removed off the critical path; close() waits for those, so a
  // host stop leaves none behind.
  const { retire, all: retired } = createRetiring();

  async function launch(ctx: RunContext, callbacks: RunCallbacks): Promise<LaunchedRun> {
    // First: listing the group's MCP tools waits on their services, which answer while the mount plan
    // below (a walk of the mounted trees, synchronous) runs.
    const startParams = Promise.resolve(deps.startParams(ctx));
    startParams.catch(() => undefined);
    // The plan comes right after the sync, with no await between: a change made after the sync is counted
    // by the next one, and no plan trusts an older sync.
    const walkSync = await syncWalks();
    const { spec, secretMounts, sharedMounts, hostAddress } = containerFor(ctx.group, walkSync);
    const identity = runIdentityOf(ctx, { secretMounts, sharedMounts });
    // The pre-started container's spec against the one a run gets now, per run: a secret that appeared in
    // a mounted tree meanwhile is hidden only in a new container.
    const prestarted = pool.take(ctx.group.id, fingerprintOf(spec));
    const container = prestarted ?? (await launchContainer(docker, { ...spec, runId: ctx.runId }));
    if (prestarted)
      logger.debug({ runId: ctx.runId, container: container.name }, 'run took a pre-started container');
    return openRun(deps, {
      ctx,
      callbacks,
      container,
      identity,
      credentialsUrl: deps.gateway.credentialsUrlFor(hostAddress),
      startParams,
      stopGraceMs: containers.stop_grace_ms,
      guards: [
        (stop) =>
          watchDiskQuota(
            quotaFolders(spec.mounts, containers),
            containers.disk_check_ms,
            (reason) => stop(reason, { now: true }),
            {
              onWatchError: (folder, err) =>
                logger.warn(
                  { runId: ctx.runId, folder: folder.label, err: err.message },
                  'cannot watch a folder for its disk quota; it is checked every disk_check_ms only',
                ),
            },
          ),
      ],
    });
  }

  return {
    start: (ctx, callbacks): RunHandle =>
      runHandleOf(deps, ctx, launch(ctx, callbacks), {
        retire,
        retryable: (err) => !(err instanceof NonRetryable),
        // The group is active: its next run should not wait for a container either.
        afterEnd: () => pool.warm(ctx.group),
      }),
    warm: (group) => pool.warm(group),
    prestarted: () => pool.snapshot(),
    prestartStatus: () => ({ budget: deps.prestart, containers: pool.snapshot() }),
    refresh: () =>
      refreshPrestarted(pool, {
        groupById: deps.groupById,
        fingerprintNow: (group) => fingerprintOf(containerFor(group).spec),
        changedReason: 'its mounts, network or settings changed',
        warm: (group) => pool.warm(group),
      }),
    async close() {
      await pool.close();
      await retired();
      await deps.closeWalks?.();
    },
  };
}

/** The container a group's runs get now, apart from its run id, and which of its mounts held secrets. */
function agentContainerFor(
  deps: DockerAgentRunnerDeps,
  group: RunContext['group'],
  walkSync: WalkSync | undefined,
): {
  spec: Omit<ContainerSpec, 'runId'>;
  secretMounts: string[];
  hostAddress: string;
  sharedMounts: string[];
} {
  const { containers, networks, logger } = deps;
  let specNetwork: ContainerSpec['network'];
  let hostAddress: string;
  if (group.networkMode === 'full') {
    specNetwork = { mode: 'full' };
    hostAddress = networks.full.hostAddress;
  } else {
    const g = networks.gateway;
    if ('unavailable' in g) throw new NonRetryable(g.unavailable);
    specNetwork = { mode: 'gateway', networkName: g.networkName, hostAddress: g.hostAddress };
    hostAddress = g.hostAddress;
  }
  const plan = deps.planMounts(group, walkSync);
  for (const r of plan.rejected) logger.warn({ groupId: group.id, reason: r.reason }, 'extra mount rejected');
  const user = prepareOwnership(plan, deps.hostIds);
  const spec: Omit<ContainerSpec, 'runId'> = {
    groupId: group.id,
    image: deps.image,
    mounts: plan.mounts.map(({ hostPath, containerPath, readOnly }) => ({
      hostPath,
      containerPath,
      readOnly,
    })),
    // No key here: what a container's environment holds, every process in it can read.
    env: { ...deps.env(), OPENAI_BASE_URL: deps.gateway.baseUrlFor(hostAddress) },
    network: specNetwork,
    limits: {
      memoryMb: containers.memory_mb,
      cpus: containers.cpus,
      pids: containers.pids,
      fileSizeMb: containers.group_quota_mb,
    },
    timeouts: {
      hardMs: containers.hard_timeout_ms,
      idleMs: containers.idle_timeout_ms,
      graceMs: containers.stop_grace_ms,
    },
    labels: deps.labels,
    nameScope: deps.nameScope,
    hostInstanceId: deps.hostInstanceId,
    ...(user ? { user } : {}),
  };
  return { spec, secretMounts: plan.secretMounts, sharedMounts: plan.sharedMounts, hostAddress };
}

/** Two specs that differ only in run id and labels make the same container for a run. */
function fingerprintOf(spec: Omit<ContainerSpec, 'runId'>): string {
  return JSON.stringify(spec);
}

/** A launch failure that trying again cannot fix (configuration, missing isolation). */
export class NonRetryable extends Error {}
