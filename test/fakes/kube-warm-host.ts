/**
 * A host process's Kubernetes runner, alone, for the SIGKILL test: it proves the data folder's policy on the
 * fake API server, warms one pod for a group, prints `ready` once it waits, and stays until it is killed.
 * Everything comes from the environment (the test's rig): KUBECONFIG_FILE, KUBE_IMAGE, KUBE_GATEWAY,
 * KUBE_FORBIDDEN, KUBE_DATA_FOLDER, KUBE_HOST_ID, KUBE_GROUPS_DIR.
 */
import { Attach, CoreV1Api, Exec, NetworkingV1Api, Watch } from '@kubernetes/client-node';
import path from 'node:path';
import pino from 'pino';
import { createKubernetesAgentRunner } from '../../host/containers/kubernetes/kubernetes-agent-runner.ts';
import { kubernetesRunnerConfigSchema } from '../../host/containers/kubernetes/kubernetes-config.ts';
import { loadKubeConfig } from '../../host/containers/kubernetes/kube-config.ts';
import { probeNetworkPolicy } from '../../host/containers/kubernetes/network-probe.ts';
import { containersConfigSchema } from '../../host/containers/run/container-config.ts';
import { systemClock } from '../../host/time/clock.ts';
import { rigGroup } from '../helpers/run-context.ts';

function need(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`kube-warm-host: set ${name}`);
  return value;
}

const kc = loadKubeConfig({ kubeconfig: need('KUBECONFIG_FILE') });
const api = {
  core: kc.makeApiClient(CoreV1Api),
  networking: kc.makeApiClient(NetworkingV1Api),
  attach: new Attach(kc),
  exec: new Exec(kc),
  watch: new Watch(kc),
};
const image = need('KUBE_IMAGE');
const gatewayAddress = need('KUBE_GATEWAY');
const scope = { dataFolderId: need('KUBE_DATA_FOLDER'), hostInstanceId: need('KUBE_HOST_ID') };
const cluster = kubernetesRunnerConfigSchema.parse({ image, gateway_address: gatewayAddress });
const noRuns = () => {
  throw new Error('kube-warm-host runs no turn: it only warms a pod');
};
const runner = createKubernetesAgentRunner({
  ...scope,
  api,
  gateway: { issueKey: noRuns, baseUrlFor: noRuns, credentialsUrlFor: noRuns },
  groupById: (id) => rigGroup(id),
  startParams: noRuns,
  env: () => ({ TZ: 'UTC' }),
  handlersFor: noRuns,
  onProtocolProblem: () => undefined,
  onRunEnded: () => undefined,
  logger: pino({ level: 'silent' }),
  groupDir: (groupId) => path.join(need('KUBE_GROUPS_DIR'), groupId),
  // Beside the groups' folders, as <data>/sessions is beside <data>/groups.
  sessionDir: (groupId) => path.join(need('KUBE_GROUPS_DIR'), '..', 'sessions', groupId),
  cluster: { ...cluster, image, gateway_address: gatewayAddress },
  containers: containersConfigSchema.parse({ group_quota_mb: 64, session_quota_mb: 16 }),
  clock: systemClock,
  prestart: { count: 1, memoryMb: 256, idleMs: 600_000 },
  probe: () =>
    probeNetworkPolicy(
      api,
      {
        ...scope,
        namespace: cluster.namespace,
        image,
        gatewayAddress,
        forbiddenAddress: need('KUBE_FORBIDDEN'),
      },
      systemClock,
    ),
});
await runner.prepare();
runner.warm(rigGroup('killed-host-group'));
for (;;) {
  const [warm] = runner.prestartStatus().containers;
  if (warm) {
    process.stdout.write(`warm ${warm.name}\nready\n`);
    break;
  }
  await new Promise((r) => setTimeout(r, 100));
}
// Holds the pod's attach stream open until the test kills the process.
setInterval(() => undefined, 60_000);
