import { checkCluster } from '../../containers/kubernetes/cluster-check.ts';
import { loadKubeConfig } from '../../containers/kubernetes/kube-config.ts';
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
  const result = await checkCluster(kc, k8s.namespace);
  return { name: 'runner', ...result, detail: `kubernetes: ${result.detail}` };
};
