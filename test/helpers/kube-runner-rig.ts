import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { Attach, CoreV1Api, Exec, NetworkingV1Api, Watch } from '@kubernetes/client-node';
import type { HostMethods } from '../../container-agent/src/protocol.ts';
import type { RpcHandlers } from '../../container-agent/src/rpc/peer.ts';
import { containersConfigSchema } from '../../host/containers/run/container-config.ts';
import { ensureAgentImage } from '../../host/containers/image/image-ensure.ts';
import { defaultBridgeAddress } from '../../host/containers/network/network-gateway.ts';
import { setUpRunNetworks } from '../../host/containers/network/run-networks.ts';
import {
  createKubernetesAgentRunner,
  type KubernetesAgentRunner,
  type KubernetesAgentRunnerDeps,
} from '../../host/containers/kubernetes/kubernetes-agent-runner.ts';
import { kubernetesRunnerConfigSchema } from '../../host/containers/kubernetes/kubernetes-config.ts';
import { loadKubeConfig } from '../../host/containers/kubernetes/kube-config.ts';
import { probeNetworkPolicy } from '../../host/containers/kubernetes/network-probe.ts';
import type { RunWiring } from '../../host/containers/run/run-opening.ts';
import { gatewayConfigSchema, providerConfigSchema } from '../../host/gateway/config.ts';
import { createGateway, type Gateway } from '../../host/gateway/gateway.ts';
import { systemClock } from '../../host/time/clock.ts';
import { createDockerPods } from '../fakes/kube-api/docker-pods.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../fakes/kube-api/fake-kube-api.ts';
import { createMemoryUsageStore } from '../fakes/memory-usage-store.ts';
import { startFakeProvider, type FakeProvider } from '../fakes/fake-provider.ts';
import { replyOnlyHandlers } from './reply-only-handlers.ts';
import { rigGroup } from './run-context.ts';
import { makeTempDir, removeTempDir } from './temp-dir.ts';

/**
 * Everything a Kubernetes runner needs without a cluster, for its tests and its bench: the real agent image,
 * the real gateway in front of a fake provider, the isolated gateway network behind the host's firewall, and
 * two fake API servers whose pods are Docker containers: one on that network (a cluster that enforces
 * NetworkPolicy), one on Docker's bridge (a cluster that ignores it), with an address on the host that only
 * the second reaches (the probe's forbidden address).
 */
export interface KubeRig {
  fake: FakeProvider;
  gateway: Gateway;
  image: string;
  /** The isolated network's name and the host's address on it (the Docker runner's "gateway" network). */
  gatewayNetwork: { networkName: string; hostAddress: string };
  gatewayAddress: string;
  outsideAddress: string;
  enforcing: FakeKubeApi;
  unenforcing: FakeKubeApi;
  /** Every key the gateway issued, in order. */
  issuedKeys: string[];
  groupsDir: string;
  /** Each group's session folder (its conversation) on the host, as `<data>/sessions` holds them. */
  sessionsDir: string;
  /** The wiring every runner of the rig shares (gateway, start params, handlers). */
  wiring: RunWiring;
  /** A runner on `api`, made as the host makes it for `[runner] kind = "kubernetes"`. */
  runnerOn(api: FakeKubeApi, overrides?: Partial<KubernetesAgentRunnerDeps>): KubernetesAgentRunner;
  close(): Promise<void>;
}

export async function startKubeRig(options: {
  docker: Docker;
  projectRoot: string;
  /** A label on every container the rig's pods make, so cleanup stays in its lane. */
  testRun: string;
  logger: Logger;
  providerKey: string;
  /** Host handlers beyond replying and finishing (the bash check, say). */
  handlers?: Partial<RpcHandlers<HostMethods>>;
}): Promise<KubeRig> {
  const { docker, testRun, logger } = options;
  const cleanups: (() => Promise<unknown>)[] = [];
  // The rig's own folder, removed by close(): it outlives any one test.
  const base = makeTempDir('carapace-kube-rig-');
  cleanups.push(async () => removeTempDir(base));
  let folders = 0;
  const tempDir = () => fs.mkdtempSync(path.join(base, `d${folders++}-`));
  const image = (await ensureAgentImage({ docker, projectRoot: options.projectRoot })).tag;
  const groupsDir = tempDir();
  const sessionsDir = tempDir();
  const fake = await startFakeProvider({ apiKey: options.providerKey });
  cleanups.push(() => fake.close());
  const gateway = createGateway({
    config: () => gatewayConfigSchema.parse({}),
    provider: providerConfigSchema.parse({ base_url: fake.openaiBaseUrl, model: 'fake-model' }),
    providerApiKey: options.providerKey,
    usageStore: createMemoryUsageStore(),
    clock: systemClock,
    timezone: () => 'UTC',
    maxOutputTokens: 256,
    logger,
  });
  cleanups.push(() => gateway.close());
  const bridge = await defaultBridgeAddress(docker);
  const { networks } = await setUpRunNetworks({
    docker,
    gateway,
    configuredName: `carapace-kube-${testRun}`,
    dataDir: tempDir(),
    dataLabel: `k${testRun}`,
    hostInstanceId: `kube-${testRun}`,
    onNetwork: (_name, remove) => void cleanups.push(remove),
    logger,
  });
  if ('unavailable' in networks.gateway) throw new Error(networks.gateway.unavailable);
  const gatewayNetwork = networks.gateway;
  const gatewayAddress = `${gatewayNetwork.hostAddress}:${gateway.port}`;
  const outside = net.createServer((socket) => socket.end());
  await new Promise<void>((resolve) => outside.listen(0, bridge, resolve));
  cleanups.push(() => new Promise((resolve) => outside.close(resolve)));
  const outsideAddress = `${bridge}:${(outside.address() as net.AddressInfo).port}`;
  const labels = { 'carapace.test': testRun };
  const enforcing = await startFakeKubeApi({
    pods: createDockerPods({ docker, network: gatewayNetwork.networkName, labels }),
  });
  const unenforcing = await startFakeKubeApi({
    pods: createDockerPods({ docker, network: 'bridge', labels }),
  });
  cleanups.push(
    () => enforcing.close(),
    () => unenforcing.close(),
  );

  const issuedKeys: string[] = [];
  const wiring: RunWiring = {
    gateway: {
      issueKey: (owner) => {
        const key = gateway.issueKey(owner);
        issuedKeys.push(key.key);
        return key;
      },
      baseUrlFor: (address) => gateway.baseUrlFor(address),
      credentialsUrlFor: (address) => gateway.credentialsUrlFor(address),
    },
    groupById: (id) => rigGroup(id),
    startParams: () => ({
      assistantName: 'Andy',
      timezone: 'UTC',
      formatting: 'Plain text.',
      limits: { maxToolSteps: 3, maxOutputTokens: 256, wallTimeMs: 60_000 },
      model: 'fake-model',
    }),
    env: () => ({ TZ: 'UTC' }),
    handlersFor: (_identity, callbacks, onDone) => replyOnlyHandlers(callbacks, onDone, options.handlers),
    onProtocolProblem: () => undefined,
    onRunEnded: () => undefined,
    logger,
  };
  const runners: KubernetesAgentRunner[] = [];

  return {
    fake,
    gateway,
    image,
    gatewayNetwork,
    gatewayAddress,
    outsideAddress,
    enforcing,
    unenforcing,
    issuedKeys,
    groupsDir,
    sessionsDir,
    wiring,
    runnerOn(api, overrides = {}) {
      const kc = loadKubeConfig({ kubeconfig: api.writeKubeconfig(tempDir()) });
      const clients = {
        core: kc.makeApiClient(CoreV1Api),
        networking: kc.makeApiClient(NetworkingV1Api),
        attach: new Attach(kc),
        exec: new Exec(kc),
        watch: new Watch(kc),
      };
      const cluster = kubernetesRunnerConfigSchema.parse({
        image,
        gateway_address: gatewayAddress,
        resources: { scratch_mb: 32 },
      });
      const scope = { dataFolderId: `k${testRun}`, hostInstanceId: `kube-${testRun}` };
      const runner = createKubernetesAgentRunner({
        ...wiring,
        ...scope,
        api: clients,
        groupDir: (groupId) => path.join(groupsDir, groupId),
        sessionDir: (groupId) => path.join(sessionsDir, groupId),
        cluster: { ...cluster, image, gateway_address: gatewayAddress },
        containers: containersConfigSchema.parse({
          group_quota_mb: 64,
          session_quota_mb: 16,
          stop_grace_ms: 500,
        }),
        clock: systemClock,
        probe: () =>
          probeNetworkPolicy(
            clients,
            {
              ...scope,
              namespace: cluster.namespace,
              image,
              gatewayAddress,
              forbiddenAddress: outsideAddress,
            },
            systemClock,
          ),
        ...overrides,
      });
      runners.push(runner);
      return runner;
    },
    async close() {
      for (const r of runners) await r.close().catch(() => undefined);
      for (const c of cleanups.reverse()) await c().catch(() => undefined);
    },
  };
}
