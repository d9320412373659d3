/**
 * `[runner] kind = "kubernetes"` through the whole product: the real host (productionRunnerFactory, the
 * Kubernetes runtime: its gateway on the address the pods reach, the policy, the probe) against the fake API
 * server, whose pods are real containers of the agent image on an isolated network that lets them reach only
 * the gateway's port (the cluster's enforcing network plugin). A message on the console comes back as the
 * agent's reply from a pod; no Docker-runner container is made.
 */
import crypto from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ensureAgentImage } from '../../host/containers/image/image-ensure.ts';
import { defaultBridgeAddress, ensureGatewayNetwork } from '../../host/containers/network/network-gateway.ts';
import {
  applyGatewayFirewall,
  removeGatewayFirewall,
} from '../../host/containers/network/network-host-firewall.ts';
import { reply } from '../fakes/fake-provider.ts';
import { turnResponder } from '../fakes/e2e-responders.ts';
import { createDockerPods } from '../fakes/kube-api/docker-pods.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../fakes/kube-api/fake-kube-api.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.ts';
import { startE2eHost, type E2eHost } from './e2e-harness.ts';

const docker = new Docker();
const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const suffix = crypto.randomBytes(4).toString('hex');
const networkName = `carapace-e2e-kube-${suffix}`;

/** A port free now on this machine: the gateway's, which the pods' address and the firewall must know first. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

await describeDocker('e2e: turns on the Kubernetes runner (fake API server, pods as containers)', () => {
  let h: E2eHost;
  let kube: FakeKubeApi;
  let outside: net.Server;
  let dir = '';

  beforeAll(async () => {
    dir = makeTempDir('carapace-e2e-kube-');
    const image = (await ensureAgentImage({ docker, projectRoot })).tag;
    const port = await freePort();
    const network = await ensureGatewayNetwork(docker, networkName, { 'carapace.test': suffix });
    await applyGatewayFirewall(docker, { ...network, allowTcpPorts: [port] });
    outside = net.createServer((socket) => socket.end());
    const bridge = await defaultBridgeAddress(docker);
    await new Promise<void>((resolve) => outside.listen(0, bridge, resolve));
    kube = await startFakeKubeApi({
      pods: createDockerPods({ docker, network: network.networkName, labels: { 'carapace.test': suffix } }),
    });
    h = await startE2eHost({
      responder: turnResponder((t) => reply.text(`[${t.group}] from a pod: ${t.text}`)),
      config: {
        gateway: {
          port,
          retry_base_ms: 50,
          prices: { 'fake-model': { input_per_mtok_usd: 0, output_per_mtok_usd: 0 } },
        },
        runner: {
          kind: 'kubernetes',
          kubernetes: {
            kubeconfig: kube.writeKubeconfig(dir),
            image,
            gateway_address: `${network.hostAddress}:${port}`,
            probe_address: `${bridge}:${(outside.address() as net.AddressInfo).port}`,
            resources: { memory_mb: 512 },
          },
        },
      },
    });
  }, 300_000);

  afterAll(async () => {
    await h?.stop();
    await kube?.close();
    outside?.close();
    await removeGatewayFirewall(docker, networkName).catch(() => undefined);
    await docker
      .getNetwork(networkName)
      .remove()
      .catch(() => undefined);
    if (dir) removeTempDir(dir);
  }, 60_000);

  it('answers a console message from a pod, after the probe proved the policy, and leaves no pod', async () => {
    const main = await h.send('main', 'hello over the cluster');
    expect(main.stdout).toBe('[main] from a pod: hello over the cluster\n');
    expect(main.code).toBe(0);
    // One probe pod, then the run's pod with both principals; both gone; no Docker-runner container made.
    expect(kube.accepted().map((p) => p.spec!.containers.map((c) => c.name).join('+'))).toEqual([
      'probe',
      'agent+commands',
    ]);
    expect(kube.pods()).toEqual([]);
    expect(h.started()).toEqual([]);
    expect(h.logEntries('network policy verified')).toHaveLength(1);
    for (const r of h.fake.requests) expect(r.headers.authorization).toBe(`Bearer ${h.providerKey}`);
  }, 180_000);
});
