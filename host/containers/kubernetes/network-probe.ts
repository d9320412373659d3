import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Clock } from '../../time/clock.ts';
import { waitFor } from '../../time/clock-timers.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { createAndFollowPod, type PodClients } from './pod-follower.ts';
import {
  dataFolderSelector,
  networkProbePodSpec,
  POD_LABEL_RUN,
  PROBE_EXIT_NO_GATEWAY,
  PROBE_EXIT_UNLIMITED,
  type ProbePodInput,
} from './pod-spec.ts';

export interface NetworkProbeResult {
  enforced: boolean;
  detail: string;
  fix?: string;
}

const PROBE_TIMEOUT_MS = 90_000;

/**
 * Runs the network probe pod once and reads its verdict, failing closed: a probe that cannot be created,
 * does not finish or ends any other way counts as "not enforced".
 */
export async function probeNetworkPolicy(
  api: PodClients,
  input: Omit<ProbePodInput, 'probeId'>,
  clock: Pick<Clock, 'setTimer'>,
): Promise<NetworkProbeResult> {
  const pod = networkProbePodSpec({ ...input, probeId: randomBytes(4).toString('hex') });
  const fixUnenforced =
    'use a network plugin that enforces NetworkPolicy (Calico, Cilium, …), or run with [runner] kind = "docker"';
  let follower;
  try {
    follower = await createAndFollowPod(api, pod, {
      clock,
      selector: {
        ...dataFolderSelector(input.dataFolderId),
        [POD_LABEL_RUN]: pod.metadata!.labels![POD_LABEL_RUN]!,
      },
    });
  } catch (err) {
    return { enforced: false, detail: `the network probe could not start: ${errorMessage(err)}` };
  }
  try {
    const exitCode = await Promise.race([
      follower.until(() => {
        const p = follower.latest();
        if (!p) return follower.goneWhy() ?? 'the probe pod disappeared';
        if (p.status?.phase === 'Failed' && !p.status.containerStatuses?.[0]?.state?.terminated)
          return `the probe pod failed (${p.status.reason ?? 'no reason'})`;
        return p.status?.containerStatuses?.[0]?.state?.terminated?.exitCode;
      }),
      waitFor(clock, PROBE_TIMEOUT_MS).then(
        () => `the probe did not finish within ${PROBE_TIMEOUT_MS / 1000} s`,
      ),
    ]);
    if (exitCode === 0) {
      return {
        enforced: true,
        detail: `NetworkPolicy is enforced: a probe pod reached the gateway at ${input.gatewayAddress} and not ${input.forbiddenAddress}`,
      };
    }
    if (exitCode === PROBE_EXIT_UNLIMITED) {
      return {
        enforced: false,
        detail: `NetworkPolicy is not enforced: a probe pod under the gateway-only policy reached ${input.forbiddenAddress}`,
        fix: fixUnenforced,
      };
    }
    if (exitCode === PROBE_EXIT_NO_GATEWAY) {
      return {
        enforced: false,
        detail: `a probe pod could not reach the gateway at ${input.gatewayAddress}, so runs could not either`,
        fix: 'check [runner.kubernetes] gateway_address (and gateway_pod_labels when the gateway runs in the cluster)',
      };
    }
    return {
      enforced: false,
      detail: typeof exitCode === 'string' ? exitCode : `the probe exited with ${exitCode}`,
    };
  } finally {
    follower.stop();
    await follower.remove(0).catch(() => undefined);
  }
}

/** The address a pod without the policy would reach: the API server's, when the kubeconfig names an IP. */
export function defaultProbeAddress(kc: KubeConfig): string | undefined {
  const server = kc.getCurrentCluster()?.server;
  if (!server) return undefined;
  const url = new URL(server);
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return isIP(url.hostname) === 4 ? `${url.hostname}:${port}` : undefined;
}
