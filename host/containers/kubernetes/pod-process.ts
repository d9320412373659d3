import { PassThrough } from 'node:stream';
import type { Attach, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import type { ContainerExit, ContainerExitReason, ContainerProcess } from '../../ipc/container-process.ts';
import type { Clock } from '../../time/clock.ts';
import { waitFor } from '../../time/clock-timers.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { createRunTimers } from '../run/run-timers.ts';
import { createAndFollowPod, type PodClients } from './pod-follower.ts';

/** The container of the pod that speaks the IPC protocol on its stdio (pod-spec.ts). */
export const AGENT_CONTAINER = 'agent';
/** How long a deleted pod's output may take to drain before the run is reported over. */
const OUTPUT_DRAIN_MS = 2_000;
/** How long the copy back of a finished run's group folder may take before the pod is deleted anyway. */
const BEFORE_DELETE_MS = 120_000;

export interface PodApi extends PodClients {
  attach: Attach;
}

export interface PodLaunchOptions {
  clock: Pick<Clock, 'setTimer'>;
  timeouts: { hardMs: number; idleMs: number; graceMs: number };
  /** Labels only this pod carries, for the watch that follows it. */
  selector: Record<string, string>;
  /** How long the pod may take to run its agent (image pull, scheduling) before the run gives up. */
  startTimeoutMs: number;
  /** Runs once the agent has exited, before the pod is deleted (the group folder's copy back). */
  beforeDelete?(): Promise<void>;
}

const agentStatus = (pod: V1Pod): V1ContainerStatus | undefined =>
  pod.status?.containerStatuses?.find((s) => s.name === AGENT_CONTAINER);

/** Why a pod will never run its agent, from its status; undefined while it may still. */
function startFailure(pod: V1Pod): string | undefined {
  if (pod.status?.phase === 'Failed') {
    return `the pod failed (${pod.status.reason ?? 'no reason given'}${pod.status.message ? `: ${pod.status.message}` : ''})`;
  }
  const waiting = agentStatus(pod)?.state?.waiting;
  if (
    waiting?.reason &&
    /ErrImagePull|ImagePullBackOff|InvalidImageName|CreateContainerError/.test(waiting.reason)
  ) {
    return `the agent container cannot start: ${waiting.reason}${waiting.message ? ` (${waiting.message})` : ''}`;
  }
  return undefined;
}

/** Why the agent is already gone before its run began, if it is. */
function exitedEarly(pod: V1Pod): string | undefined {
  const terminated = agentStatus(pod)?.state?.terminated;
  if (!terminated) return undefined;
  return `the agent exited before its run (code ${terminated.exitCode}${terminated.reason ? `, ${terminated.reason}` : ''})`;
}

/** The run's end as the pod's status tells it. */
function exitOf(pod: V1Pod): ContainerExit | undefined {
  const terminated = agentStatus(pod)?.state?.terminated;
  if (pod.status?.reason === 'DeadlineExceeded') {
    return {
      exitCode: terminated?.exitCode ?? null,
      reason: 'hard_timeout',
      detail: 'the pod passed its activeDeadlineSeconds',
    };
  }
  if (!terminated)
    return pod.status?.phase === 'Failed'
      ? { exitCode: null, reason: 'error', detail: startFailure(pod) }
      : undefined;
  if (terminated.reason === 'OOMKilled')
    return { exitCode: terminated.exitCode, reason: 'oom', detail: 'exceeded the pod memory limit' };
  return { exitCode: terminated.exitCode, reason: 'exited' };
}

/**
 * Creates a run's pod and gives it the shape the IPC session drives (ContainerProcess), as
 * `launchContainer` does for a Docker container: the agent's stdio over the API server's attach stream
 * (WebSocket, `v5.channel.k8s.io`), its end from the pod's status through a watch, the idle and hard
 * timeouts on the host's clock (the pod's `activeDeadlineSeconds` is the second wall, held by the kubelet
 * even when the host is gone). The pod is deleted when the run ends, however it ends.
 */
export async function launchPod(
  api: PodApi,
  pod: V1Pod,
  options: PodLaunchOptions,
): Promise<ContainerProcess> {
  const namespace = pod.metadata!.namespace!;
  const pods = await createAndFollowPod(api, pod, options);
  const { name } = pods;
  const latest = () => pods.latest() ?? {};
  const deletePod = (graceSeconds: number) => pods.remove(graceSeconds);
  const follow = pods;

  const running = await Promise.race([
    pods.until(() =>
      pods.goneWhy() !== undefined
        ? `the pod was deleted before it ran`
        : agentStatus(latest())?.state?.running
          ? true
          : (startFailure(latest()) ?? exitedEarly(latest())),
    ),
    waitFor(options.clock, options.startTimeoutMs).then(
      () => `the pod did not run its agent within ${options.startTimeoutMs} ms`,
    ),
  ]);
  if (running !== true) {
    follow.stop();
    await deletePod(0).catch(() => undefined);
    throw new Error(`Starting pod ${name} failed: ${running}`);
  }

  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let socket: Awaited<ReturnType<Attach['attach']>>;
  try {
    socket = await api.attach.attach(namespace, name, AGENT_CONTAINER, stdout, stderr, stdin, false);
  } catch (err) {
    follow.stop();
    await deletePod(0).catch(() => undefined);
    throw new Error(`Attaching to pod ${name} failed: ${errorMessage(err)}`, { cause: err });
  }
  const outputEnded = new Promise<void>((resolve) => {
    const end = () => {
      stdout.end();
      stderr.end();
      resolve();
    };
    (socket as unknown as NodeJS.EventEmitter).once('close', end);
    (socket as unknown as NodeJS.EventEmitter).once('error', end);
  });

  let stopRequest: { reason: ContainerExitReason; detail: string } | undefined;
  let finished = false;
  const timers = createRunTimers({
    clock: options.clock,
    hardMs: options.timeouts.hardMs,
    idleMs: options.timeouts.idleMs,
    onExpire: (reason, detail) =>
      void stopWith(reason, detail, options.timeouts.graceMs).catch(() => undefined),
  });
  stdout.on('data', timers.touch);
  stderr.on('data', timers.touch);

  const agentExited = pods.until((): ContainerExit | undefined => {
    const why = pods.goneWhy();
    return why !== undefined ? { exitCode: null, reason: 'error', detail: why } : exitOf(latest());
  });
  // A stop whose grace ran out ends the run without waiting for the agent: its pod is then deleted.
  let forceEnd!: (exit: ContainerExit) => void;
  const forced = new Promise<ContainerExit>((resolve) => (forceEnd = resolve));
  const exited: Promise<ContainerExit> = Promise.race([agentExited, forced])
    .then(async (exit) => {
      await Promise.race([outputEnded, waitFor(options.clock, OUTPUT_DRAIN_MS)]);
      follow.stop();
      if (pods.goneWhy() === undefined && options.beforeDelete) {
        await Promise.race([
          options.beforeDelete().catch(() => undefined),
          waitFor(options.clock, BEFORE_DELETE_MS),
        ]);
      }
      await deletePod(0).catch(() => undefined);
      return stopRequest
        ? { exitCode: exit.exitCode, reason: stopRequest.reason, detail: stopRequest.detail }
        : exit;
    })
    .finally(() => {
      finished = true;
      timers.cancel();
      (socket as unknown as { terminate?: () => void }).terminate?.();
    });

  /**
   * The pod's SIGTERM is the end of the agent's stdin (it exits at once when the host is gone), its SIGKILL
   * the pod's deletion after the grace: a pod cannot signal one of its containers through the API. Either
   * way `beforeDelete` (the group folder's copy back, through the commands' container) runs first, so what
   * the run wrote reaches the host as a stopped Docker container's bind-mounted folder does.
   */
  async function stopWith(reason: ContainerExitReason, detail: string, graceMs: number): Promise<void> {
    if (finished) return;
    stopRequest ??= { reason, detail };
    stdin.end();
    const gone = await Promise.race([
      agentExited.then(() => true),
      waitFor(options.clock, graceMs).then(() => false),
    ]);
    if (!gone) forceEnd({ exitCode: null, reason, detail });
    await exited;
  }

  return {
    name,
    id: pods.latest()?.metadata?.uid ?? name,
    stdin,
    stdout,
    stderr,
    touch: timers.touch,
    beginRun: timers.beginRun,
    stop: (reason, graceMs = options.timeouts.graceMs) => stopWith('stopped', reason, graceMs),
    exited,
  };
}
