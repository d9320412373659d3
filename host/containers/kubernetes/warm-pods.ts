import { randomBytes } from 'node:crypto';
import type { ContainerProcess } from '../../ipc/container-process.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Clock } from '../../time/clock.ts';
import { createPrestartPool, type PrestartBudget, type PrestartPool } from '../run/prestart-pool.ts';
import { launchPod, type PodApi, type PodLaunchOptions } from './pod-process.ts';
import {
  agentPodSpec,
  dataFolderSelector,
  labelValue,
  POD_LABEL_RUN,
  type AgentPodInput,
} from './pod-spec.ts';

/** An agent pod running and waiting for run.start; the run that takes it binds what happens at its end. */
export interface AgentPod extends ContainerProcess {
  /**
   * What must happen once the agent has exited and before the pod is deleted (the group folder's copy
   * back): known only to the run that takes the pod, since the folder is copied in at the run's start.
   * A pod serves one run: a second bind is refused.
   */
  bindRun(beforeDelete: () => Promise<void>): void;
}

/** What a group's pods are made from now, apart from the run: two equal ones make the same pod. */
export type AgentPodShape = Omit<AgentPodInput, 'runId' | 'waitMs'>;

export interface AgentPodStarter {
  api: PodApi;
  clock: Pick<Clock, 'setTimer'>;
  timeouts: PodLaunchOptions['timeouts'];
  startTimeoutMs: number;
}

/**
 * Creates a pod of `shape` for `runId` and waits until its agent runs, attached. A warm pod (`waitMs`) has its
 * deadline moved out by the time it may wait; the host's run timers start only when a run takes it, in either
 * case (run-opening.ts begins them).
 */
export async function startAgentPod(
  starter: AgentPodStarter,
  shape: AgentPodShape,
  runId: string | number,
  waitMs?: number,
): Promise<AgentPod> {
  const pod = agentPodSpec({ ...shape, runId, waitMs });
  let beforeDelete: (() => Promise<void>) | undefined;
  const container = await launchPod(starter.api, pod, {
    clock: starter.clock,
    timeouts: starter.timeouts,
    selector: { ...dataFolderSelector(shape.dataFolderId), [POD_LABEL_RUN]: labelValue(String(runId)) },
    startTimeoutMs: starter.startTimeoutMs,
    beforeDelete: () => beforeDelete?.() ?? Promise.resolve(),
  });
  return Object.assign(container, {
    bindRun(fn: () => Promise<void>) {
      if (beforeDelete) throw new Error(`pod ${container.name} already serves a run: a pod serves one`);
      beforeDelete = fn;
    },
  });
}

/** Two shapes that make the same pod have the same fingerprint (the env's order aside, which JSON keeps). */
export function podFingerprint(shape: AgentPodShape): string {
  return JSON.stringify(shape);
}

export interface WarmPodsDeps<G extends { id: string }> {
  starter: AgentPodStarter;
  budget: PrestartBudget;
  /** The group's pod shape as the config says now; throws when the group cannot run on the cluster. */
  shapeOf(group: G): AgentPodShape;
  /** Resolves once pods may exist (the NetworkPolicy is in place and proven); a warm pod waits for it. */
  ready(): Promise<void>;
  logger: Pick<Logger, 'debug' | 'info' | 'warn'>;
}

/**
 * Warm pods: the Docker runner's pre-start pool (its budget, one per recently active group, used once,
 * replaced after use, discarded when the group's pod would now be made differently) holding pods instead of
 * containers. A warm pod holds no key and no group files: the key comes in run.start and the folder is
 * copied in when a run takes the pod, so a warm pod never carries a folder older than its run.
 */
export function createWarmPods<G extends { id: string }>(deps: WarmPodsDeps<G>): PrestartPool<G, AgentPod> {
  return createPrestartPool<G, AgentPod>({
    budget: deps.budget,
    launch: async (group) => {
      await deps.ready();
      const shape = deps.shapeOf(group);
      // Named apart from run pods: its run id is not known yet.
      const container = await startAgentPod(
        deps.starter,
        shape,
        `pre-${randomBytes(4).toString('hex')}`,
        deps.budget.idleMs,
      );
      return { container, fingerprint: podFingerprint(shape) };
    },
    // A pod's memory is the cluster's, reserved by its request: only the budget's count applies.
    measure: () => Promise.resolve(undefined),
    logger: deps.logger,
    clock: deps.starter.clock,
  });
}
