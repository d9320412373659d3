import { CoreV1Api, NetworkingV1Api } from '@kubernetes/client-node';
import { deleteKubeLeftovers, findKubeLeftovers } from '../../containers/kubernetes/kube-leftovers.ts';
import { loadKubeConfig } from '../../containers/kubernetes/kube-config.ts';
import type { KubernetesRunnerConfig } from '../../containers/kubernetes/kubernetes-config.ts';
import { dataFolderLabel } from '../../containers/run/data-folder-label.ts';
import { describeApiError } from '../../containers/kubernetes/api-errors.ts';
import type { CliContext } from '../cli-context.ts';

/**
 * `carapace cleanup` with `[runner] kind = "kubernetes"`: the data folder's pods (runs', warm, network
 * probes) and its NetworkPolicy in the configured namespace, found by its labels. Only while no host runs
 * on the data folder: a running host's pods and policy are live (and its start already removed what
 * earlier processes left). Returns the exit code.
 */
export async function cleanupCluster(
  ctx: CliContext,
  k8s: KubernetesRunnerConfig,
  options: { dryRun: boolean; hostRunning: boolean },
): Promise<number> {
  const where = `namespace ${k8s.namespace}`;
  if (options.hostRunning) {
    ctx.out(
      `a host runs on this data folder: its pods in ${where} are live, and it removed what earlier ` +
        'processes left when it started; stop it first to clean the cluster',
    );
    return 0;
  }
  const kc = loadKubeConfig(k8s);
  const api = { core: kc.makeApiClient(CoreV1Api), networking: kc.makeApiClient(NetworkingV1Api) };
  const scope = { namespace: k8s.namespace, dataFolderId: dataFolderLabel(ctx.paths.dataDir) };
  let found;
  try {
    found = await findKubeLeftovers(api, scope);
  } catch (err) {
    ctx.err(
      `cannot list this data folder's pods and policies in ${where}: ${describeApiError(err)} ` +
        '(the host needs list on pods and networkpolicies there; see README "Kubernetes")',
    );
    return 1;
  }
  const lines = [
    ...found.pods.map((p) => `pod ${p} (${where})`),
    ...found.policies.map((p) => `networkpolicy ${p} (${where})`),
  ];
  if (lines.length === 0) {
    ctx.out(`nothing to clean up in ${where}`);
    return 0;
  }
  if (options.dryRun) {
    for (const line of lines) ctx.out(`would remove ${line}`);
    return 0;
  }
  const failed = await deleteKubeLeftovers(api, scope.namespace, found);
  for (const line of lines) ctx.out(`removed ${line}`);
  for (const f of failed) ctx.err(`could not remove ${f}`);
  return failed.length > 0 ? 1 : 0;
}
