/**
 * `[runner] kind = "kubernetes"` through the whole product: the real host (productionRunnerFactory, the
 * Kubernetes runtime: its gateway on the address the pods reach, the policy, the probe) against the fake API
 * server, whose pods are real containers of the agent image on an isolated network that lets them reach only
 * the gateway's port (the cluster's enforcing network plugin). A message on the console comes back as the
 * agent's reply from a pod; no Docker-runner container is made.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { afterAll, beforeAll, expect, it } from 'vitest';
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
import { agentImageTag } from '../helpers/agent-image.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.ts';
import { folderUsage } from '../../host/containers/mounts/disk-quota.ts';
import { ROOT } from '../helpers/processes.ts';
import { eventually, startE2eHost, type E2eHost } from './e2e-harness.ts';

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
  let gatewayAddress = '';
  let outsideAddress = '';

  beforeAll(async () => {
    dir = makeTempDir('carapace-e2e-kube-');
    const image = await agentImageTag(docker, projectRoot);
    const port = await freePort();
    const network = await ensureGatewayNetwork(docker, networkName, { 'carapace.test': suffix });
    await applyGatewayFirewall(docker, { ...network, allowTcpPorts: [port] });
    outside = net.createServer((socket) => socket.end());
    const bridge = await defaultBridgeAddress(docker);
    await new Promise<void>((resolve) => outside.listen(0, bridge, resolve));
    gatewayAddress = `${network.hostAddress}:${port}`;
    outsideAddress = `${bridge}:${(outside.address() as net.AddressInfo).port}`;
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
        // Small, so a command can go past it quickly; the pods' group volume is as large.
        containers: { group_quota_mb: 2 },
      },
    });
    await h.addLocalGroups('alpha', 'beta', 'gamma');
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
      'agent+commands+session',
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

  it('stops what a command writes past the group quota at the copy back: nothing past it reaches the host, and the run says why', async () => {
    const tag = crypto.randomBytes(4).toString('hex');
    h.fake.setResponder(
      securityResponder({
        beta: runTools([bash(`head -c 3000000 /dev/zero > big-${tag}.bin && echo written`)]),
      }),
    );
    const res = await h.send('beta', '@Andy fill the folder');
    expect(res.code).toBe(0);
    // In the pod the write succeeded (its volume is the cluster's to bound): the command said so.
    expect(res.stdout).toContain('written');
    const run = await eventually('the run to end', () => {
      const last = h.runs('beta').at(-1);
      return last?.exitReason ? last : undefined;
    });
    expect(run.exitReason).toMatch(
      /^disk quota: the run left more than the group folder's quota of 2 MB \(\[containers\] group_quota_mb\) in it/,
    );
    const groupDir = path.join(h.paths.groupsDir, 'beta');
    expect(fs.existsSync(path.join(groupDir, `big-${tag}.bin`))).toBe(false);
    expect((await folderUsage(groupDir)).bytes).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(h.logEntries("could not take the group folder back from the run's pod")).toHaveLength(1);
    expect(kube.pods()).toEqual([]);
  }, 180_000);

  it("refuses a command's connection to any address but the gateway, while the gateway answers", async () => {
    // bash's /dev/tcp: a TCP connect from the commands' container, 4 s at most, to each address.
    const probe = (address: string) =>
      `timeout 4 bash -c 'exec 3<>/dev/tcp/${address.replace(':', '/')}' 2>/dev/null && echo "${address} reached" || echo "${address} refused"`;
    h.fake.setResponder(
      securityResponder({ gamma: runTools([bash(`${probe(gatewayAddress)}; ${probe(outsideAddress)}`)]) }),
    );
    const res = await h.send('gamma', '@Andy try the network');
    expect(res.code).toBe(0);
    const [result] = resultsOf(res.stdout);
    expect(result).toContain(`${gatewayAddress} reached`);
    expect(result).toContain(`${outsideAddress} refused`);
    // The agent's own traffic went through the gateway: this reply came back over it.
    expect(kube.pods()).toEqual([]);
  }, 180_000);

  it('leaves no pod after a host SIGKILL mid-run once the next host starts, and answers the group after', async () => {
    // The host of the suite hands over to one in its own process, which can be killed for real.
    await h.host.stop('the next host runs in its own process');
    h.fake.setResponder(turnResponder(() => reply.hang()));
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'carapace.js'), 'start', '--no-console'], {
      cwd: ROOT,
      env: { ...process.env, ...h.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let childLog = '';
    child.stdout.on('data', (d: Buffer) => (childLog += d.toString()));
    child.stderr.on('data', (d: Buffer) => (childLog += d.toString()));
    const childExit = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_c, sig) => resolve(sig)),
    );
    try {
      // Its own line once it serves (a socket file alone may be the stopped host's).
      await eventually(
        'the host in its own process to serve',
        () => childLog.includes('Carapace is running'),
        120_000,
      );
      const hanging = h.send('alpha', '@Andy a turn the host dies in', 60);
      void hanging.then((r) => (childLog += `\n[send ended: ${r.code}] ${r.stdout}${r.stderr}`));
      const running = await eventually(
        'a run pod of alpha',
        () =>
          kube
            .pods()
            .find(
              (p) =>
                p.metadata?.labels?.['carapace.group'] === 'alpha' &&
                p.status?.containerStatuses?.some((c) => c.name === 'agent' && c.state?.running),
            ),
        120_000,
      );
      await eventually('the agent to ask the provider', () => h.requestsOf('alpha').length > 0 || undefined);
      child.kill('SIGKILL');
      expect(await childExit).toBe('SIGKILL');
      await hanging;
      // The pod outlives its host (on a cluster too, until activeDeadlineSeconds).
      expect(kube.pods().map((p) => p.metadata!.name)).toContain(running.metadata!.name);
    } catch (err) {
      throw new Error(`${String(err)}\nthe host in its own process logged:\n${childLog.slice(-4000)}`, {
        cause: err,
      });
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await childExit;
    }

    h.fake.setResponder(turnResponder((t) => reply.text(`[${t.group}] after the restart: ${t.text}`)));
    await h.restart();
    // The new host removed the dead host's pod before its first run.
    expect(h.logEntries('removed agent pods left by an earlier host process')).not.toHaveLength(0);
    const next = await h.send('alpha', '@Andy are you back?');
    expect(next.code).toBe(0);
    expect(next.stdout).toContain('[alpha] after the restart: @Andy are you back?');
    await eventually('every pod gone', () => kube.pods().length === 0);
  }, 300_000);
});
