import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { expect, it } from 'vitest';
import { LABEL_DATA_DIR } from '../../host/containers/run/docker-leftovers.ts';
import { gatewayChainName, hostIptables } from '../../host/containers/network/network-host-firewall.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { ROOT } from '../helpers/processes.ts';
import { startE2eHost } from './e2e-harness.ts';

const docker = new Docker();
const iptables = hostIptables();
/** The firewall needs root and iptables; without them the runtime makes no chain, and there is none to check. */
const firewall = iptables !== undefined && process.getuid?.() === 0;

async function chains(): Promise<string[]> {
  if (!iptables) return [];
  const { output } = await iptables(['-w', '-S']);
  return output.split('\n').flatMap((l) => /^-N (CARAPACE-GW-\S+)$/.exec(l.trim())?.[1] ?? []);
}

async function networksOf(dataDir: string) {
  return docker.listNetworks({ filters: { label: [`${LABEL_DATA_DIR}=${dataDir}`] } });
}

await describeDocker('Docker resources come and go with the host', () => {
  it('a host makes its gateway network and firewall chain at start and removes both when it stops', async () => {
    const e2e = await startE2eHost();
    try {
      const [network, ...more] = await networksOf(e2e.paths.dataDir);
      expect(more).toEqual([]);
      expect(network?.Name).toMatch(/^carapace-e2e-/);
      if (firewall) expect(await chains()).toContain(gatewayChainName(network!.Id));

      await e2e.host.stop('test over');
      expect(await networksOf(e2e.paths.dataDir)).toEqual([]);
      expect(await chains()).not.toContain(gatewayChainName(network!.Id));
    } finally {
      await e2e.stop();
    }
  }, 240_000);

  it('npm run demo leaves no network, chain or container behind', async () => {
    const chainsBefore = await chains();
    const before = new Set((await docker.listNetworks()).map((n) => n.Id));
    const tag = crypto.randomBytes(4).toString('hex');
    const output = await new Promise<{ code: number | null; text: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', 'demo.ts')], {
        cwd: ROOT,
        env: { ...process.env, TMPDIR: fs.mkdtempSync(path.join(os.tmpdir(), `demo-${tag}-`)) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let text = '';
      child.stdout.on('data', (d: Buffer) => (text += d.toString()));
      child.stderr.on('data', (d: Buffer) => (text += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, text }));
    });
    expect(output.text).toMatch(/turn: answered/);
    expect(output.code).toBe(0);
    const demoNetworks = (await docker.listNetworks()).filter(
      (n) => !before.has(n.Id) && (n.Labels?.[LABEL_DATA_DIR] ?? '').includes(`demo-${tag}-`),
    );
    expect(demoNetworks).toEqual([]);
    const demoContainers = await docker.listContainers({
      all: true,
      filters: { label: ['carapace.managed=1'] },
    });
    expect(demoContainers.filter((c) => (c.Labels?.[LABEL_DATA_DIR] ?? '').includes(`demo-${tag}-`))).toEqual(
      [],
    );
    // Every chain the demo made went with its network (other suites' chains may come and go meanwhile).
    const networkIds = new Set((await docker.listNetworks()).map((n) => n.Id.slice(0, 12)));
    const stray = (await chains()).filter(
      (c) => !chainsBefore.includes(c) && !networkIds.has(c.slice('CARAPACE-GW-'.length)),
    );
    expect(stray).toEqual([]);
  }, 300_000);
});
