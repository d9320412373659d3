import { checkCluster } from '../../containers/kubernetes/cluster-check.ts';
import { CoreV1Api, NetworkingV1Api, Watch } from '@kubernetes/client-node';
import { ensureGatewayPolicy } from '../../containers/kubernetes/gateway-policy.ts';
import { loadKubeConfig } from '../../containers/kubernetes/kube-config.ts';
import { defaultProbeAddress, probeNetworkPolicy } from '../../containers/kubernetes/network-probe.ts';
import { dataFolderLabel } from '../../containers/run/data-folder-label.ts';
import { systemClock } from '../../time/clock.ts';
import { errorMessage } from '../../errors/error-message.ts';
import type { Check } from './doctor-check.ts';

/** "runner: docker" or the cluster's answer; a cluster that cannot be shown safe fails (closed). */
export const checkRunner: Check = async (ctx) => {
  const { runner } = ctx.config();
  if (runner.kind === 'docker') {
    return { name: 'runner', ok: true, detail: 'docker: each turn a container on the local engine' };
  }
  const k8s = runner.kubernetes;
  let kc;
  try {
    kc = loadKubeConfig(k8s);
  } catch (err) {
    return {
      name: 'runner',
      ok: false,
      detail: `kubernetes: cannot load ${k8s.kubeconfig ?? 'the in-cluster service account'}: ${errorMessage(err)}`,
      fix: 'set [runner.kubernetes] kubeconfig to a readable kubeconfig file, or run the host in the cluster',
    };
  }
  const { image, gateway_address: gatewayAddress } = k8s;
  const forbiddenAddress = k8s.probe_address ?? defaultProbeAddress(kc);
  const result = await checkCluster(kc, k8s.namespace, async () => {
    if (!image || !gatewayAddress || !forbiddenAddress) {
      return {
        enforced: false,
        detail: 'NetworkPolicy enforcement cannot be probed without image, gateway_address and probe_address',
        fix: 'set them under [runner.kubernetes] (probe_address: an IPv4:port any pod reaches without the policy)',
      };
    }
    const api = { core: kc.makeApiClient(CoreV1Api), watch: new Watch(kc) };
    const dataFolderId = dataFolderLabel(ctx.paths.dataDir);
    // The probe proves the policy the host runs under, so it is put in place as the host would.
    await ensureGatewayPolicy(kc.makeApiClient(NetworkingV1Api), {
      namespace: k8s.namespace,
      dataFolderId,
      gatewayAddress,
      gatewayPodLabels: k8s.gateway_pod_labels,
    });
    return probeNetworkPolicy(
      api,
      {
        namespace: k8s.namespace,
        dataFolderId,
        hostInstanceId: 'doctor',
        image,
        runtimeClass: k8s.runtime_class,
        gatewayAddress,
        forbiddenAddress,
      },
      systemClock,
    );
  });
  return { name: 'runner', ...result, detail: `kubernetes: ${result.detail}` };
};
