import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import Docker from 'dockerode';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchContainer } from '../../../host/containers/run/container-launch.ts';
import { removeOrphans } from '../../../host/containers/run/container-orphans.ts';
import type { ContainerSpec } from '../../../host/containers/run/container-spec.ts';
import {
  applyGatewayFirewall,
  removeGatewayFirewall,
} from '../../../host/containers/network/network-host-firewall.ts';
import {
  defaultBridgeAddress,
  ensureGatewayNetwork,
  type GatewayNetwork,
} from '../../../host/containers/network/network-gateway.ts';
import { ensureProbeImage } from '../../fixtures/agent-entries/probe-image.ts';
import { describeDocker } from '../../helpers/docker-available.ts';
import { containerSpecs } from '../../helpers/container-specs.ts';
import { collect, firstLine } from '../../helpers/stream-text.ts';

const docker = new Docker();
const testRun = randomUUID().slice(0, 8);
const networkName = `carapace-test-gw-${testRun}`;
let image = '';
const servers: net.Server[] = [];

const spec = containerSpecs({ groupId: 'net', testRun, image: () => image });

/** A TCP server on this machine that answers "hello" (only ever bound to addresses of this host). */
async function listen(host: string): Promise<number> {
  const server = net.createServer((socket) => {
    socket.on('error', () => {}); // the probe hangs up at once
    socket.end('hello\n');
  });
  servers.push(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  return (server.address() as net.AddressInfo).port;
}

type ConnectReport = {
  defaultRoute: boolean;
  routes: number;
  results: { target: string; ok: boolean; error?: string }[];
};

async function probeConnect(network: ContainerSpec['network'], targets: string[]): Promise<ConnectReport> {
  const proc = await launchContainer(
    docker,
    spec({ network, env: { PROBE_MODE: 'connect', PROBE_TARGETS: targets.join(',') } }),
  );
  const output = collect(proc.stdout);
  const exit = await proc.exited;
  expect(exit).toEqual({ exitCode: 0, reason: 'exited' });
  return JSON.parse((await output).trim()) as ConnectReport;
}

/** An IPv4 address of this machine outside Docker's bridges (e.g. its LAN interface), if any. */
function otherHostAddress(exclude: string[]): string | undefined {
  for (const [name, addresses] of Object.entries(os.networkInterfaces())) {
    if (name.startsWith('docker') || name.startsWith('br-') || name.startsWith('veth')) continue;
    const v4 = addresses?.find((a) => a.family === 'IPv4' && !a.internal && !exclude.includes(a.address));
    if (v4) return v4.address;
  }
  return undefined;
}

await describeDocker('docker network modes', () => {
  let gateway: GatewayNetwork;
  let firewallApplied = false;

  beforeAll(async () => {
    image = await ensureProbeImage(docker);
    gateway = await ensureGatewayNetwork(docker, networkName);
  }, 15 * 60_000);

  afterAll(async () => {
    for (const server of servers) server.close();
    if (firewallApplied) await removeGatewayFirewall(docker, networkName);
    await removeOrphans(docker, {
      exceptHostInstanceId: 'none',
      onlyWithLabels: { 'carapace.test': testRun },
    });
    await docker
      .getNetwork(networkName)
      .remove()
      .catch(() => {});
  });

  it('creates an internal network once and returns the host address on it', async () => {
    const info = (await docker.getNetwork(networkName).inspect()) as {
      Internal: boolean;
      Driver: string;
      Options: Record<string, string>;
    };
    expect(info.Internal).toBe(true);
    expect(info.Driver).toBe('bridge');
    expect(info.Options['com.docker.network.bridge.enable_icc']).toBe('false');
    expect(gateway.hostAddress).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    // The address is really on a host interface (the network's bridge).
    const addresses = execFileSync('ip', ['-4', '-o', 'addr'], { encoding: 'utf8' });
    expect(addresses).toContain(`inet ${gateway.hostAddress}/`);
    // Idempotent.
    expect(await ensureGatewayNetwork(docker, networkName)).toEqual(gateway);
  });

  it('refuses to use an existing network of that name that is not internal', async () => {
    const name = `carapace-test-open-${testRun}`;
    await docker.createNetwork({ Name: name, Driver: 'bridge' });
    try {
      await expect(ensureGatewayNetwork(docker, name)).rejects.toThrow(/not an internal bridge network/);
    } finally {
      await docker.getNetwork(name).remove();
    }
  });

  it('gateway mode, as Docker sets it up: forwarding off the bridge is blocked, the host itself is open', async () => {
    // A server in a full-mode container: reaching it from the gateway network means crossing
    // bridges (FORWARD), i.e. leaving the internal network. All of it stays on this machine.
    const server = await launchContainer(docker, spec({ env: { PROBE_MODE: 'serve', PROBE_PORT: '8080' } }));
    // And one on the gateway network itself: another group's container must not be reachable either.
    const neighbour = await launchContainer(
      docker,
      spec({ network: { mode: 'gateway', networkName }, env: { PROBE_MODE: 'serve', PROBE_PORT: '8080' } }),
    );
    try {
      expect(await firstLine(server.stdout)).toBe('listening');
      expect(await firstLine(neighbour.stdout)).toBe('listening');
      const info = await docker.getContainer(server.id).inspect();
      const serverIp = info.NetworkSettings.Networks.bridge!.IPAddress;
      const neighbourInfo = await docker.getContainer(neighbour.id).inspect();
      const neighbourIp = neighbourInfo.NetworkSettings.Networks[networkName]!.IPAddress;
      const hostPort = await listen(gateway.hostAddress);

      const fromGateway = await probeConnect(
        { mode: 'gateway', networkName, hostAddress: gateway.hostAddress },
        [`${serverIp}:8080`, `${neighbourIp}:8080`, `${gateway.hostAddress}:${hostPort}`],
      );
      expect(fromGateway.results[0]).toMatchObject({ ok: false });
      expect(fromGateway.results[1]).toMatchObject({ ok: false });
      expect(fromGateway.results[2]).toEqual({ target: `${gateway.hostAddress}:${hostPort}`, ok: true });
      // Control: the same server is reachable from the default bridge, so the block above is the network's doing.
      const fromFull = await probeConnect({ mode: 'full' }, [`${serverIp}:8080`]);
      expect(fromFull.results[0]).toMatchObject({ ok: true });
    } finally {
      await Promise.all([server.stop('done', 0), neighbour.stop('done', 0)]);
    }
  });

  it('gateway mode with the host firewall: only the allowed port on the host address is reachable', async () => {
    const allowedPort = await listen(gateway.hostAddress);
    const otherPortSameAddress = await listen(gateway.hostAddress);
    const other = otherHostAddress([gateway.hostAddress]);
    const otherAddressPort = other ? await listen(other) : undefined;
    const firewall = await applyGatewayFirewall(docker, {
      networkName,
      hostAddress: gateway.hostAddress,
      allowTcpPorts: [allowedPort],
    });
    if (process.getuid?.() !== 0) {
      // Not root: nothing applied, and the owner is told what to run.
      expect(firewall.applied).toBe(false);
      expect(firewall.commands.join('\n')).toContain(`--dports ${allowedPort}`);
      return;
    }
    expect(firewall).toMatchObject({ applied: true });
    firewallApplied = true;
    const targets = [
      `${gateway.hostAddress}:${allowedPort}`,
      `${gateway.hostAddress}:${otherPortSameAddress}`,
      ...(other ? [`${other}:${otherAddressPort}`] : []),
    ];
    const report = await probeConnect(
      { mode: 'gateway', networkName, hostAddress: gateway.hostAddress },
      targets,
    );
    expect(report.results[0]).toEqual({ target: targets[0], ok: true });
    expect(report.results[1]).toMatchObject({ target: targets[1], ok: false, error: 'ECONNREFUSED' });
    if (other)
      expect(report.results[2]).toMatchObject({ target: targets[2], ok: false, error: 'ECONNREFUSED' });
    // Applying again (host restart) replaces the rules instead of stacking them.
    expect(
      await applyGatewayFirewall(docker, {
        networkName,
        hostAddress: gateway.hostAddress,
        allowTcpPorts: [allowedPort],
      }),
    ).toMatchObject({
      applied: true,
    });
    // Other networks (a running host's own) may have chains too; this network's must appear once.
    const networkId = ((await docker.getNetwork(networkName).inspect()) as { Id: string }).Id;
    const input = execFileSync('iptables', ['-w', '-S', 'INPUT'], { encoding: 'utf8' });
    expect(
      input.split('\n').filter((line) => line.includes(`CARAPACE-GW-${networkId.slice(0, 12)}`)),
    ).toHaveLength(1);
  });

  it('gateway mode without a given host address looks it up and maps host.docker.internal to it', async () => {
    const proc = await launchContainer(
      docker,
      spec({
        network: { mode: 'gateway', networkName },
        env: { PROBE_MODE: 'bash', PROBE_SCRIPT: 'grep host.docker.internal /etc/hosts' },
      }),
    );
    const output = collect(proc.stdout);
    expect((await proc.exited).exitCode).toBe(0);
    expect((await output).trim().split(/\s+/)).toEqual([gateway.hostAddress, 'host.docker.internal']);
  });

  it('full mode: the container has a default route and reaches the host on the default bridge address', async () => {
    const bridge = await defaultBridgeAddress(docker);
    expect(execFileSync('ip', ['-4', '-o', 'addr'], { encoding: 'utf8' })).toContain(`inet ${bridge}/`);
    const port = await listen(bridge);
    const report = await probeConnect({ mode: 'full' }, [
      `${bridge}:${port}`,
      `host.docker.internal:${port}`,
    ]);
    expect(report.defaultRoute).toBe(true);
    expect(report.results.map((r) => r.ok)).toEqual([true, true]);
  });
});
