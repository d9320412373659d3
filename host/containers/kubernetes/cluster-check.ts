import { ApiException, CoreV1Api, NetworkingV1Api, type KubeConfig } from '@kubernetes/client-node';
import { describeApiError } from './api-errors.ts';
import type { NetworkProbeResult } from './network-probe.ts';

export interface ClusterCheck {
  ok: boolean;
  detail: string;
  fix?: string;
}

const code = (err: unknown) => (err instanceof ApiException ? err.code : undefined);

/**
 * What `doctor` asks of a cluster before a Kubernetes runner may use it, failing closed: the API answers,
 * this identity may list pods and NetworkPolicies in the namespace, and a probe pod proves the policy is
 * enforced (it reaches the gateway and not an address any unrestricted pod reaches).
 */
export async function checkCluster(
  kc: KubeConfig,
  namespace: string,
  /** Runs the network probe pod (network-probe.ts): the one proof that egress is limited. */
  probe: () => Promise<NetworkProbeResult>,
): Promise<ClusterCheck> {
  const server = kc.getCurrentCluster()?.server ?? 'the in-cluster API server';
  const rbacFix =
    `grant this identity get, list, watch, create and delete on pods, create on pods/exec and pods/attach, ` +
    `and get, list and create on networkpolicies in namespace ${namespace}`;
  try {
    await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace, limit: 1 });
  } catch (err) {
    const status = code(err);
    return {
      ok: false,
      detail: `cannot list pods in namespace ${namespace} at ${server}: ${describeApiError(err)}`,
      fix:
        status === 401 || status === 403
          ? rbacFix
          : status === 404
            ? `create the namespace: kubectl create namespace ${namespace}`
            : 'check [runner.kubernetes] kubeconfig and context, and that the cluster is running',
    };
  }
  try {
    await kc.makeApiClient(NetworkingV1Api).listNamespacedNetworkPolicy({ namespace, limit: 1 });
  } catch (err) {
    return {
      ok: false,
      detail: `cannot read NetworkPolicies in namespace ${namespace}: ${describeApiError(err)}; without them no run's egress is limited to the gateway`,
      fix:
        code(err) === 401 || code(err) === 403 ? rbacFix : 'use a cluster that serves networking.k8s.io/v1',
    };
  }
  const verdict = await probe();
  return {
    ok: verdict.enforced,
    detail: `${server} answers, namespace ${namespace}'s pods and NetworkPolicies are readable; ${verdict.detail}`,
    ...(verdict.fix ? { fix: verdict.fix } : {}),
  };
}
