import { ApiException, CoreV1Api, NetworkingV1Api, type KubeConfig } from '@kubernetes/client-node';
import { describeApiError } from './api-errors.ts';

export interface ClusterCheck {
  ok: boolean;
  detail: string;
  fix?: string;
}

const code = (err: unknown) => (err instanceof ApiException ? err.code : undefined);

/**
 * What `doctor` asks of a cluster before a Kubernetes runner may use it, failing closed: the API answers,
 * this identity may list pods and NetworkPolicies in the namespace, and the policy's enforcement is
 * proven. Enforcement needs a probe pod trying a forbidden connection; that probe comes with the runner,
 * so until then the last step always fails, and says why.
 */
export async function checkCluster(kc: KubeConfig, namespace: string): Promise<ClusterCheck> {
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
  return {
    ok: false,
    detail:
      `${server} answers and namespace ${namespace}'s pods and NetworkPolicies are readable, but NetworkPolicy ` +
      `enforcement is not verified: its probe comes with the Kubernetes runner, which is not built yet`,
    fix: 'set [runner] kind = "docker" until the Kubernetes runner lands (DESIGN.md "Kubernetes runner")',
  };
}
