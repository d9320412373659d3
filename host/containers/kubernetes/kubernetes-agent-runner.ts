import type { Exec, NetworkingV1Api } from '@kubernetes/client-node';
import { errorMessage } from '../../errors/error-message.ts';
import { FolderQuotaError } from './group-sync.ts';
import {
  copyFolderBack,
  copyFolderIn,
  packRunFolders,
  type PodFolder,
  type RunFolder,
} from './folder-copy.ts';
import { ensureGatewayPolicy } from './gateway-policy.ts';
import type { AgentRunner, RunCallbacks, RunContext, RunHandle } from '../../router/agent-runner.ts';
import type { Clock } from '../../time/clock.ts';
import type { ContainersConfig } from '../run/container-config.ts';
import {
  createRetiring,
  openRun,
  runHandleOf,
  runIdentityOf,
  type LaunchedRun,
  type RunWiring,
} from '../run/run-opening.ts';
import type { KubernetesRunnerConfig } from './kubernetes-config.ts';
import type { PodApi } from './pod-process.ts';
import type { NetworkProbeResult } from './network-probe.ts';
import { PodSpecError } from './pod-spec.ts';
import { removeKubeLeftovers } from './kube-leftovers.ts';
import { refreshPrestarted, type PrestartBudget } from '../run/prestart-pool.ts';
import type { PrestartStatus } from '../run/docker-agent-runner.ts';
import {
  createWarmPods,
  podFingerprint,
  startAgentPod,
  type AgentPodShape,
  type AgentPodStarter,
} from './warm-pods.ts';

export interface KubernetesAgentRunnerDeps extends RunWiring {
  api: PodApi & { networking: NetworkingV1Api; exec: Exec };
  /** The group's folder on the host: copied into each run's pod and the changes copied back. */
  groupDir(groupId: string): string;
  /** The group's session folder on the host (its conversation): copied in and back as the group folder is. */
  sessionDir(groupId: string): string;
  /** `[runner.kubernetes]`, with the image and the gateway's address required (the config schema says so). */
  cluster: KubernetesRunnerConfig & { image: string; gateway_address: string };
  /** Quotas, timeouts and the grace period: the same settings as the Docker runner's. */
  containers: ContainersConfig;
  /** The data folder's short id: names, labels and the NetworkPolicy are scoped to it. */
  dataFolderId: string;
  hostInstanceId: string;
  clock: Clock;
  /** How long a pod may take to run its agent (scheduling, image pull). */
  podStartTimeoutMs?: number;
  /** Proves the NetworkPolicy is enforced (network-probe.ts); no run starts until it has. */
  probe(): Promise<NetworkProbeResult>;
  /** Warm pods (`[runs.prestart]`, as the Docker runner's pre-started containers); absent: none. */
  prestart?: PrestartBudget;
}

/** The cluster cannot run turns safely (its network policy is not enforced): trying again will not help. */
export class ClusterRefusal extends Error {}

export interface KubernetesAgentRunner extends AgentRunner {
  /**
   * Makes sure the data folder's NetworkPolicy exists and a probe pod proves it enforced; runs refuse to
   * start until both hold. A cluster found not to enforce it is refused for the host's life.
   */
  prepare(): Promise<void>;
  /** Starts the group's next pod ahead of its run, when the warm-pod budget allows. */
  warm(group: RunContext['group']): void;
  /** The warm-pod budget and the warm pods now, for `carapace status`. */
  prestartStatus(): PrestartStatus;
  /**
   * Deletes, at once, each warm pod whose group was removed or whose pod would now be made differently
   * (image, resources, quotas, timeouts, env), and warms the changed groups anew.
   */
  refresh(): void;
  /** Deletes the warm pods and waits for finished runs' pods to be deleted; runs in flight are the router's to stop. */
  close(): Promise<void>;
}

const DEFAULT_POD_START_TIMEOUT_MS = 120_000;

/**
 * Runs every agent turn as a fresh pod, through the same IPC session and handlers as the Docker runner
 * (run-opening.ts): only how the agent's process comes to exist differs (DESIGN.md "Kubernetes runner").
 * The pod spec holds no key (the run's gateway key travels in run.start over the attach stream), and no run
 * starts before the data folder's NetworkPolicy is in place.
 */
export function createKubernetesAgentRunner(deps: KubernetesAgentRunnerDeps): KubernetesAgentRunner {
  const { cluster, containers } = deps;
  const { retire, all: retired } = createRetiring();
  const gatewayUrl = `http://${cluster.gateway_address}`;
  let policy: Promise<void> | undefined;

  let refusal: ClusterRefusal | undefined;
  /** Pods of this data folder left by an earlier host process (killed, or its node lost): their runs are over. */
  async function removeLeftovers(): Promise<void> {
    const { pods, failed } = await removeKubeLeftovers(deps.api, {
      namespace: cluster.namespace,
      dataFolderId: deps.dataFolderId,
      keepHost: deps.hostInstanceId,
    });
    if (pods.length > 0)
      deps.logger.warn(
        { removed: pods.length - failed.length, failed },
        'removed agent pods left by an earlier host process',
      );
  }

  async function ensureLimited(): Promise<void> {
    await removeLeftovers();
    await ensureGatewayPolicy(deps.api.networking, {
      namespace: cluster.namespace,
      dataFolderId: deps.dataFolderId,
      gatewayAddress: cluster.gateway_address,
      gatewayPodLabels: cluster.gateway_pod_labels,
    });
    const verdict = await deps.probe();
    if (verdict.enforced) {
      deps.logger.info({ detail: verdict.detail }, 'network policy verified');
      return;
    }
    refusal = new ClusterRefusal(`${verdict.detail}${verdict.fix ? `; ${verdict.fix}` : ''}`);
    throw refusal;
  }
  const prepare = () => {
    if (refusal) return Promise.reject(refusal);
    policy ??= ensureLimited();
    // A failed attempt is tried again by the next run, not remembered as a refusal forever.
    policy.catch(() => (policy = undefined));
    return policy;
  };

  /** The group's pod as the config says now, apart from its run. */
  function shapeOf(group: RunContext['group']): AgentPodShape {
    if (group.networkMode === 'full') {
      throw new PodSpecError(
        `group ${group.id} asks for full network access, which the Kubernetes runner does not give ` +
          '(its pods reach the gateway only, under the policy its start probe proved): register the group again ' +
          `with the gateway network (carapace groups remove ${group.id}, which keeps its folders, then ` +
          `carapace groups add ${group.id} … --network gateway), or run it on a host with [runner] kind = "docker"`,
      );
    }
    return {
      namespace: cluster.namespace,
      dataFolderId: deps.dataFolderId,
      hostInstanceId: deps.hostInstanceId,
      groupId: group.id,
      image: cluster.image,
      runtimeClass: cluster.runtime_class,
      resources: {
        cpu: cluster.resources.cpu,
        memoryMb: cluster.resources.memory_mb,
        scratchMb: cluster.resources.scratch_mb,
      },
      quotas: { groupMb: containers.group_quota_mb, sessionMb: containers.session_quota_mb },
      hardTimeoutMs: containers.hard_timeout_ms,
      env: { ...deps.env(), OPENAI_BASE_URL: `${gatewayUrl}/v1` },
    };
  }
  const starter: AgentPodStarter = {
    api: deps.api,
    clock: deps.clock,
    timeouts: {
      hardMs: containers.hard_timeout_ms,
      idleMs: containers.idle_timeout_ms,
      graceMs: containers.stop_grace_ms,
    },
    startTimeoutMs: deps.podStartTimeoutMs ?? DEFAULT_POD_START_TIMEOUT_MS,
  };
  const budget = deps.prestart ?? { count: 0, memoryMb: 0, idleMs: 60_000 };
  const pool = createWarmPods<RunContext['group']>({
    starter,
    budget,
    shapeOf,
    ready: prepare,
    logger: deps.logger,
  });

  /** `end.problem`: why the run's folders could not all come back (a quota), which its outcome then says. */
  async function launch(
    ctx: RunContext,
    callbacks: RunCallbacks,
    end: { problem?: string },
  ): Promise<LaunchedRun> {
    const startParams = Promise.resolve(deps.startParams(ctx));
    startParams.catch(() => undefined);
    const shape = shapeOf(ctx.group);
    await prepare();
    const warmPod = pool.take(ctx.group.id, podFingerprint(shape));
    const log = deps.logger.child({ runId: ctx.runId, groupId: ctx.group.id });
    let folders: RunFolder[];
    try {
      folders = await packRunFolders(deps, ctx.group.id);
    } catch (err) {
      await warmPod?.stop('its run could not pack its folders', 0);
      throw err;
    }
    const container = warmPod ?? (await startAgentPod(starter, shape, ctx.runId));
    if (warmPod) log.debug({ pod: warmPod.name }, 'run took a warm pod');
    const inPod = (f: (typeof folders)[number]): PodFolder => ({
      ...f.pod,
      namespace: cluster.namespace,
      pod: container.name,
    });
    // The folders are in place before run.start, which is what the agent waits for.
    for (const f of folders) {
      const copied = await copyFolderIn(deps.api.exec, inPod(f), f.packed.tar);
      if (!copied.ok) {
        await container.stop(`the ${f.pod.names.name} could not be copied in`, 0);
        throw new Error(
          `copying the ${f.pod.names.name} into pod ${container.name} failed: ${copied.detail}`,
        );
      }
    }
    // Only now: a copy back measured against a folder that never fully went in would remove what did not.
    // In turn, not at once: two tar streams at once would double what the host holds of a run's files.
    container.bindRun(async () => {
      for (const f of folders) {
        try {
          const changes = await copyFolderBack(deps.api.exec, inPod(f), f.root, f.packed.snapshot, f.quota);
          log.info(changes, `${f.pod.names.name} taken back from the pod`);
        } catch (err) {
          log.warn(
            { err: errorMessage(err) },
            `could not take the ${f.pod.names.name} back from the run's pod`,
          );
          // The reply went out already; the run's outcome says what of its work did not reach the host.
          end.problem ??=
            err instanceof FolderQuotaError
              ? `disk quota: ${errorMessage(err)}`
              : `the ${f.pod.names.name} could not all be taken back: ${errorMessage(err)}`;
        }
      }
    });
    return openRun(deps, {
      ctx,
      callbacks,
      container,
      // Nothing of the host is mounted into a pod: no mount can hold a secret or be shared.
      identity: runIdentityOf(ctx, { secretMounts: [], sharedMounts: [] }),
      credentialsUrl: `${gatewayUrl}/credentials`,
      startParams,
      stopGraceMs: containers.stop_grace_ms,
    });
  }

  const warm = (group: RunContext['group']) => {
    if (group.networkMode !== 'full') pool.warm(group);
  };
  return {
    prepare,
    start: (ctx, callbacks): RunHandle => {
      const end: { problem?: string } = {};
      return runHandleOf(deps, ctx, launch(ctx, callbacks, end), {
        retire,
        retryable: (err) => !(err instanceof PodSpecError || err instanceof ClusterRefusal),
        doneAtExit: true,
        endProblem: () => end.problem,
        // The group is active: its next run should not wait for a pod either.
        afterEnd: () => warm(ctx.group),
      });
    },
    warm,
    prestartStatus: () => ({ budget, containers: pool.snapshot() }),
    refresh: () =>
      refreshPrestarted(pool, {
        groupById: deps.groupById,
        fingerprintNow: (group) => podFingerprint(shapeOf(group)),
        changedReason: 'its image, resources or settings changed',
        warm,
      }),
    close: async () => {
      await pool.close();
      await retired();
    },
  };
}
