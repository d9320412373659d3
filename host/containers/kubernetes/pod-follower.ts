import { ApiException, type CoreV1Api, type V1Pod, type Watch } from '@kubernetes/client-node';
import type { Clock } from '../../time/clock.ts';
import { describeApiError } from './api-errors.ts';
import { watchPod } from './pod-watch.ts';

/** A pod this host created, its status kept current by a watch until `stop`. */
export interface PodFollower {
  name: string;
  /** The pod as last seen; `undefined` once it was deleted. */
  latest(): V1Pod | undefined;
  /** Why the pod is gone (deleted by anyone), once it is. */
  goneWhy(): string | undefined;
  /** Resolves with what `pick` finds in the pod's latest state, as soon as it is there. */
  until<T>(pick: () => T | undefined): Promise<T>;
  /** Deletes the pod (a pod already gone is fine). */
  remove(graceSeconds: number): Promise<void>;
  stop(): void;
}

export interface PodClients {
  core: CoreV1Api;
  watch: Watch;
}

/**
 * Creates the pod and follows it. A name taken (a crash's leftover) says how to clear it; any other refusal
 * says what the API server answered (a PodSecurity violation, a quota, RBAC).
 */
export async function createAndFollowPod(
  api: PodClients,
  pod: V1Pod,
  options: { clock: Pick<Clock, 'setTimer'>; selector: Record<string, string> },
): Promise<PodFollower> {
  const namespace = pod.metadata!.namespace!;
  const name = pod.metadata!.name!;
  let created: V1Pod;
  try {
    created = await api.core.createNamespacedPod({ namespace, body: pod });
  } catch (err) {
    if (err instanceof ApiException && err.code === 409) {
      throw new Error(
        `A pod named ${name} already exists in namespace ${namespace}: run ids must be unique per data folder. ` +
          `If it is left over from a crash, delete it: kubectl -n ${namespace} delete pod ${name}`,
        { cause: err },
      );
    }
    throw new Error(`Creating pod ${name} failed: ${describeApiError(err)}`, { cause: err });
  }

  let latest: V1Pod | undefined = created;
  let gone: string | undefined;
  const listeners = new Set<() => void>();
  const changed = () => {
    for (const l of [...listeners]) l();
  };
  const watch = watchPod({
    core: api.core,
    watch: api.watch,
    clock: options.clock,
    namespace,
    name,
    selector: options.selector,
    resourceVersion: created.metadata?.resourceVersion ?? '0',
    onPod: (p) => {
      latest = p;
      changed();
    },
    onGone: (why) => {
      gone = why;
      latest = undefined;
      changed();
    },
  });
  return {
    name,
    latest: () => latest,
    goneWhy: () => gone,
    until: (pick) =>
      new Promise((resolve) => {
        const check = () => {
          const found = pick();
          if (found === undefined) return;
          listeners.delete(check);
          resolve(found);
        };
        listeners.add(check);
        check();
      }),
    remove: (graceSeconds) =>
      api.core
        .deleteNamespacedPod({ namespace, name, gracePeriodSeconds: graceSeconds })
        .then(() => undefined)
        .catch((err: unknown) => {
          if (!(err instanceof ApiException && err.code === 404)) throw err;
        }),
    stop: () => {
      watch.stop();
      listeners.clear();
    },
  };
}
