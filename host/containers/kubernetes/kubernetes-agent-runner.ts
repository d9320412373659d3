import type { NetworkingV1Api } from '@kubernetes/client-node';
import { ensureGatewayPolicy } from './gateway-policy.ts';
import type { AgentRunner, RunCallbacks, RunContext, RunHandle } from '../../router/agent-runner.ts';
import type { Clock } from '../../time/clock.ts';
import type { ContainersConfig } from '../run/container-config.ts';
import {
  createRetiring,
  openRun,
  runHandleOf,
  type LaunchedRun,
  type RunWiring,
} from '../run/run-opening.ts';
import type { KubernetesRunnerConfig } from './kubernetes-config.ts';
import { launchPod, type PodApi } from './pod-process.ts';
import type { NetworkProbeResult } from './network-probe.ts';
import { agentPodSpec, dataFolderSelector, labelValue, PodSpecError, POD_LABEL_RUN } from './pod-spec.ts';

export interface KubernetesAgentRunnerDeps extends RunWiring {
  api: PodApi & { networking: NetworkingV1Api };
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
}

/** The cluster cannot run turns safely (its network policy is not enforced): trying again will not help. */
export class ClusterRefusal extends Error {}

export interface KubernetesAgentRunner extends AgentRunner {
  /**
   * Makes sure the data folder's NetworkPolicy exists and a probe pod proves it enforced; runs refuse to
   * start until both hold. A cluster found not to enforce it is refused for the host's life.
   */
  prepare(): Promise<void>;
  /** Waits for finished runs' pods to be deleted; runs in flight are the router's to stop. */
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
  async function ensureLimited(): Promise<void> {
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

  async function launch(ctx: RunContext, callbacks: RunCallbacks): Promise<LaunchedRun> {
    const startParams = Promise.resolve(deps.startParams(ctx));
    startParams.catch(() => undefined);
    if (ctx.group.networkMode === 'full') {
      throw new PodSpecError(
        `group ${ctx.group.id} asks for full network access, which the Kubernetes runner does not give ` +
          '(its pods reach the gateway only); set its network to "gateway" or run it with [runner] kind = "docker"',
      );
    }
    await prepare();
    const pod = agentPodSpec({
      namespace: cluster.namespace,
      dataFolderId: deps.dataFolderId,
      hostInstanceId: deps.hostInstanceId,
      runId: ctx.runId,
      groupId: ctx.group.id,
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
    });
    const container = await launchPod(deps.api, pod, {
      clock: deps.clock,
      timeouts: {
        hardMs: containers.hard_timeout_ms,
        idleMs: containers.idle_timeout_ms,
        graceMs: containers.stop_grace_ms,
      },
      selector: { ...dataFolderSelector(deps.dataFolderId), [POD_LABEL_RUN]: labelValue(String(ctx.runId)) },
      startTimeoutMs: deps.podStartTimeoutMs ?? DEFAULT_POD_START_TIMEOUT_MS,
    });
    return openRun(deps, {
      ctx,
      callbacks,
      container,
      // Nothing of the host is mounted into a pod: no mount can hold a secret or be shared.
      identity: { runId: ctx.runId, group: ctx.group, secretMounts: [], sharedMounts: [] },
      credentialsUrl: `${gatewayUrl}/credentials`,
      startParams,
      stopGraceMs: containers.stop_grace_ms,
    });
  }

  return {
    prepare,
    start: (ctx, callbacks): RunHandle =>
      runHandleOf(deps, ctx, launch(ctx, callbacks), {
        retire,
        retryable: (err) => !(err instanceof PodSpecError || err instanceof ClusterRefusal),
      }),
    close: async () => {
      await retired();
    },
  };
}
