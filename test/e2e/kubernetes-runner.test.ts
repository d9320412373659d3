/**
 * `[runner] kind = "kubernetes"` through the whole product: the real host (productionRunnerFactory, the
 * Kubernetes runtime: its gateway on the address the pods reach, the policy, the probe) against the fake API
 * server, whose pods are real containers of the agent image on an isolated network that lets them reach only
 * the gateway's port (the cluster's enforcing network plugin). A message on the console comes back as the
 * agent's reply from a pod; no Docker-runner container is made.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
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
import {
  bash,
  nextApproval,
  ownerSays,
  resultsOf,
  runTools,
  securityResponder,
} from '../fakes/security-responders.ts';
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
          },
        },
        // Every pod here is a run's or the probe's: warm pods are kubernetes-warm-pods.test.ts's.
        runs: { max_attempts: 1, prestart: { count: 0 } },
      },
    });
    const added = await h.cli(['groups', 'add', 'alpha', '--channel', 'local']);
    expect(added.code, added.stderr).toBe(0);
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

  it("asks the owner before a flagged command in the pod; the approved one runs and its file reaches the host's folder, the denied one does not", async () => {
    const seen = new Set<string>();
    const tag = crypto.randomBytes(4).toString('hex');
    const approved = `FLAGGED-kube-yes-${tag}`;
    h.fake.setResponder(
      securityResponder({ alpha: runTools([bash(`touch ${approved} && mkfifo fifo-${approved}`)]) }),
    );
    const first = h.send('alpha', '@Andy run the flagged command');
    const ask = await nextApproval(h, seen, approved);
    expect(await ownerSays(h, `approve ${ask.id}`)).toBe(
      `Approved ${ask.id}: bash may run once, with the parameters shown.`,
    );
    expect(resultsOf((await first).stdout)).toEqual(['exit code 0']);
    // Made in the pod's copy of the group folder, taken back when the run ended (the FIFO is not a file: refused).
    expect(fs.existsSync(path.join(h.paths.groupsDir, 'alpha', approved))).toBe(true);
    expect(fs.existsSync(path.join(h.paths.groupsDir, 'alpha', `fifo-${approved}`))).toBe(false);

    const denied = `FLAGGED-kube-no-${tag}`;
    h.fake.setResponder(
      securityResponder({ alpha: runTools([bash(`touch ${denied} && mkfifo fifo-${denied}`)]) }),
    );
    const second = h.send('alpha', '@Andy run the other flagged command');
    const ask2 = await nextApproval(h, seen, denied);
    expect(await ownerSays(h, `deny ${ask2.id}`)).toMatch(new RegExp(`^Denied ${ask2.id}`));
    expect(resultsOf((await second).stdout)[0]).toMatch(/^Blocked: this command was not run/);
    expect(fs.existsSync(path.join(h.paths.groupsDir, 'alpha', denied))).toBe(false);
    expect(kube.pods()).toEqual([]);
  }, 180_000);
});
