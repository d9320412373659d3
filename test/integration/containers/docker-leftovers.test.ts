import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { afterAll, expect, it } from 'vitest';
import { createCliContext } from '../../../host/cli/cli-context.ts';
import { checkLeftovers } from '../../../host/cli/commands/doctor-docker-checks.ts';
import { loadConfig } from '../../../host/config/load-config.ts';
import { findLeftovers, LABEL_DATA_DIR } from '../../../host/containers/run/docker-leftovers.ts';
import {
  applyGatewayFirewall,
  gatewayChainName,
  hostIptables,
} from '../../../host/containers/network/network-host-firewall.ts';
import { ensureGatewayNetwork } from '../../../host/containers/network/network-gateway.ts';
import { describeDocker } from '../../helpers/docker-available.ts';
import { runCli } from '../../helpers/processes.ts';

const docker = new Docker();
const firewall = hostIptables() !== undefined && process.getuid?.() === 0;
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-leftovers-'));
const goneDataDir = path.join(root, 'deleted-data-folder');
const liveDataDir = path.join(root, 'live-data-folder');
const name = `carapace-test-left-${crypto.randomBytes(4).toString('hex')}`;
const env = { CARAPACE_DATA_DIR: path.join(root, 'cli-data'), CARAPACE_CONFIG_DIR: path.join(root, 'cfg') };

afterAll(async () => {
  for (const n of [name, `${name}-live`])
    await docker
      .getNetwork(n)
      .remove()
      .catch(() => undefined);
  fs.rmSync(root, { recursive: true, force: true });
});

await describeDocker('leftovers of data folders that are gone', () => {
  it('doctor reports the network and chain of a removed data folder, and carapace cleanup removes them', async () => {
    fs.mkdirSync(liveDataDir, { recursive: true });
    const gone = await ensureGatewayNetwork(docker, name, { [LABEL_DATA_DIR]: goneDataDir });
    await ensureGatewayNetwork(docker, `${name}-live`, { [LABEL_DATA_DIR]: liveDataDir });
    const id = (await docker.getNetwork(name).inspect()).Id as string;
    if (firewall) {
      const applied = await applyGatewayFirewall(docker, {
        networkName: name,
        hostAddress: gone.hostAddress,
        allowTcpPorts: [1],
      });
      expect(applied.applied).toBe(true);
    }

    const found = await findLeftovers(docker);
    expect(found.networks.map((n) => n.name)).toContain(name);
    expect(found.networks.map((n) => n.name)).not.toContain(`${name}-live`);
    if (firewall) expect(found.chains).toContain(gatewayChainName(id));

    const ctx = createCliContext(
      { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env, cwd: root },
      loadConfig,
    );
    const report = await checkLeftovers(docker)(ctx);
    expect(report.ok).toBe(false);
    expect(report.detail).toContain(`network ${name} (data folder ${goneDataDir})`);
    expect(report.fix).toBe('carapace cleanup');

    const dry = await runCli(['cleanup', '--dry-run'], env);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`would remove network ${name}`);
    expect((await docker.listNetworks({ filters: { name: [name] } })).map((n) => n.Name)).toContain(name);

    const done = await runCli(['cleanup'], env);
    expect(done.code).toBe(0);
    expect(done.stdout).toContain(`removed network ${name}`);
    const after = await findLeftovers(docker);
    expect(after.networks.map((n) => n.name)).not.toContain(name);
    expect(after.chains).not.toContain(gatewayChainName(id));
    // The network of a folder that still exists is not touched.
    expect((await docker.listNetworks({ filters: { name: [`${name}-live`] } })).length).toBe(1);
  }, 120_000);
});
