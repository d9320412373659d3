import crypto from 'node:crypto';
import path from 'node:path';
import { Attach, CoreV1Api, Exec, NetworkingV1Api, Watch } from '@kubernetes/client-node';
import { dataFolderLabel } from '../containers/run/data-folder-label.ts';
import { createKubernetesAgentRunner } from '../containers/kubernetes/kubernetes-agent-runner.ts';
import { loadKubeConfig } from '../containers/kubernetes/kube-config.ts';
import { defaultProbeAddress, probeNetworkPolicy } from '../containers/kubernetes/network-probe.ts';
import { systemClock } from '../time/clock.ts';
import type { AgentRuntime, AgentRuntimeDeps } from './agent-runtime-deps.ts';
import { startRuntimeGateway } from './runtime-gateway.ts';
import { prestartStatusOf, runWiringFor } from './agent-runner.ts';
import { recentlyActiveGroups } from './recent-groups.ts';
import type { CloserStack } from './closer-stack.ts';

/**
 * The runtime when `[runner] kind = "kubernetes"`: the gateway on the address the pods reach, the data
 * folder's NetworkPolicy, and a probe pod proving it is enforced before any run starts (fail closed: the
 * runtime refuses to start otherwise, and the groups get the reason). No Docker engine is needed here.
 */
export async function startKubernetesRuntime(
  deps: AgentRuntimeDeps,
  closers: CloserStack,
): Promise<AgentRuntime> {
  const { config, paths, logger } = deps;
  const k8s = config.runner.kubernetes;
  const { image, gateway_address: gatewayAddress } = k8s;
  if (!image || !gatewayAddress) throw new Error('[runner.kubernetes] needs image and gateway_address');
  const [gatewayIp, gatewayPort] = gatewayAddress.split(':') as [string, string];
  const listenAddress = k8s.listen_address ?? gatewayIp;
  if (listenAddress === gatewayIp && deps.live().gateway.port !== Number(gatewayPort)) {
    throw new Error(
      `the pods reach the gateway at ${gatewayAddress}, so it must listen on port ${gatewayPort}: ` +
        `set [gateway] port = ${gatewayPort} (or listen_address under [runner.kubernetes] when a Service forwards)`,
    );
  }
  const kc = loadKubeConfig(k8s);
  const probeAddress = k8s.probe_address ?? defaultProbeAddress(kc);
  if (!probeAddress) {
    throw new Error(
      'set [runner.kubernetes] probe_address to an IPv4:port any pod reaches without the policy (the API ' +
        "server's Service address, say): the kubeconfig's server is not an IP, and without a forbidden address " +
        'the start probe cannot prove egress is limited',
    );
  }
  const hostInstanceId = deps.hostInstanceId ?? crypto.randomUUID();
  const dataFolderId = dataFolderLabel(paths.dataDir);

  const { gateway, parts } = startRuntimeGateway(deps, closers);
  await gateway.listen(['127.0.0.1', listenAddress]);

  const api = {
    core: kc.makeApiClient(CoreV1Api),
    networking: kc.makeApiClient(NetworkingV1Api),
    attach: new Attach(kc),
    exec: new Exec(kc),
    watch: new Watch(kc),
  };
  const runner = createKubernetesAgentRunner({
    ...runWiringFor(deps, gateway),
    api,
    groupDir: (groupId) => path.join(paths.groupsDir, groupId),
    sessionDir: (groupId) => path.join(paths.sessionsDir, groupId),
    cluster: { ...k8s, image, gateway_address: gatewayAddress },
    containers: config.containers,
    prestart: {
      count: config.runs.prestart.count,
      memoryMb: config.runs.prestart.memory_mb,
      idleMs: config.runs.prestart.idle_ms,
    },
    dataFolderId,
    hostInstanceId,
    clock: systemClock,
    probe: () =>
      probeNetworkPolicy(
        api,
        {
          namespace: k8s.namespace,
          dataFolderId,
          hostInstanceId,
          image,
          runtimeClass: k8s.runtime_class,
          gatewayAddress,
          forbiddenAddress: probeAddress,
        },
        systemClock,
      ),
  });
  closers.push('agent pods', () => runner.close());
  await runner.prepare();
  logger.info({ namespace: k8s.namespace, image, gateway: gatewayAddress }, 'kubernetes agent runtime ready');
  for (const group of recentlyActiveGroups(deps.store, config.runs.prestart.idle_ms)) runner.warm(group);
  return {
    runner,
    ...parts,
    prestart: {
      status: () => prestartStatusOf(runner),
      refresh: () => runner.refresh(),
    },
  };
}
