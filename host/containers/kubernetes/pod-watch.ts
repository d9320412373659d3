import { ApiException, type CoreV1Api, type V1Pod, type Watch } from '@kubernetes/client-node';
import type { Clock } from '../../time/clock.ts';

/**
 * One pod followed through the API's watch, for as long as someone cares: each change of the pod goes to
 * `onPod`, its deletion to `onGone`. A watch the server ends (its timeout, a dropped connection) or answers
 * with 410 Expired is reopened from a fresh read of the pod, so no change is missed for long and none is
 * reported twice out of order (resource versions only grow).
 */
export interface PodWatch {
  /** Stops following; no callback fires after it. */
  stop(): void;
}

const RETRY_MS = 1_000;

export function watchPod(options: {
  core: CoreV1Api;
  watch: Watch;
  clock: Pick<Clock, 'setTimer'>;
  namespace: string;
  name: string;
  /** Labels only this pod carries: the watch's selector. */
  selector: Record<string, string>;
  /** The resource version to follow from (the create's answer). */
  resourceVersion: string;
  onPod(pod: V1Pod): void;
  onGone(why: string): void;
}): PodWatch {
  const { core, watch, namespace, name } = options;
  const labelSelector = Object.entries(options.selector)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  let stopped = false;
  let abort: (() => void) | undefined;
  let version = options.resourceVersion;

  const gone = (why: string) => {
    if (stopped) return;
    stopped = true;
    options.onGone(why);
  };

  /** After the watch ended: read the pod itself (it may have changed meanwhile), then watch again. */
  async function resync(): Promise<void> {
    if (stopped) return;
    let pod: V1Pod;
    try {
      pod = await core.readNamespacedPod({ namespace, name });
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return gone('the pod was deleted');
      // The API is unreachable: try again shortly rather than lose the pod (the run's own timers still run).
      options.clock.setTimer(() => void resync(), RETRY_MS);
      return;
    }
    if (stopped) return;
    version = pod.metadata?.resourceVersion ?? version;
    options.onPod(pod);
    open();
  }

  function open(): void {
    if (stopped) return;
    let resyncing = false;
    const again = () => {
      if (resyncing) return;
      resyncing = true;
      abort?.();
      void resync();
    };
    watch
      .watch(
        `/api/v1/namespaces/${namespace}/pods`,
        { labelSelector, resourceVersion: version, allowWatchBookmarks: true },
        (type: string, object: V1Pod & { code?: number }) => {
          if (stopped) return;
          if (type === 'ERROR') return again(); // 410 Expired, or any error the server reports in-band
          const rv = object.metadata?.resourceVersion;
          if (rv) version = rv;
          if (type === 'BOOKMARK' || object.metadata?.name !== name) return;
          if (type === 'DELETED') return gone('the pod was deleted');
          options.onPod(object);
        },
        () => again(),
      )
      .then(
        (controller) => {
          abort = () => controller.abort();
          if (stopped) controller.abort();
        },
        () => again(),
      );
  }

  open();
  return {
    stop() {
      stopped = true;
      abort?.();
    },
  };
}
