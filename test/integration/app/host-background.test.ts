import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { afterAll, expect, it } from 'vitest';
import { findLeftovers, LABEL_DATA_DIR } from '../../../host/containers/run/docker-leftovers.ts';
import { gatewayChainName, hostIptables } from '../../../host/containers/network/network-host-firewall.ts';
import { hostIsRunning } from '../../../host/store/host-lock.ts';
import { describeDocker } from '../../helpers/docker-available.ts';
import { ROOT, runCli, waitFor } from '../../helpers/processes.ts';

/**
 * The README's ways of running the host without systemd must survive the terminal closing (SIGHUP to the
 * terminal's process group) and end cleanly with `carapace stop`: network and firewall chain removed.
 */
const docker = new Docker();
const firewall = hostIptables() !== undefined && process.getuid?.() === 0;
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-background-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

function folders(name: string) {
  const env = {
    CARAPACE_CONFIG_DIR: path.join(root, name, 'cfg'),
    CARAPACE_DATA_DIR: path.join(root, name, 'data'),
  };
  fs.mkdirSync(env.CARAPACE_CONFIG_DIR, { recursive: true });
  // A provider of the owner's own (never called here) is enough for the host to set up its gateway network.
  fs.writeFileSync(
    path.join(env.CARAPACE_CONFIG_DIR, 'config.toml'),
    '[provider]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "fake-model"\n[containers]\ngateway_network = "carapace-test-bg"\n[runs.prestart]\ncount = 0\n',
  );
  return env;
}

type Folders = ReturnType<typeof folders>;

async function gatewayNetworkOf(dataDir: string): Promise<string | undefined> {
  const nets = await docker.listNetworks({ filters: { label: [`${LABEL_DATA_DIR}=${dataDir}`] } });
  return nets[0]?.Id;
}

/**
 * The host's network appears once its runtime is up. A host started from a shell with its output
 * thrown away says so to nobody, so this polls; `start --detach` returns only once it is up.
 */
const waitForNetwork = (dataDir: string): Promise<string> =>
  waitFor(`the gateway network of ${dataDir}`, () => gatewayNetworkOf(dataDir), 180_000);

/** SIGHUP to the group, as a closing terminal sends it, then proof the host still answers. */
async function hangUpAndCheck(pgid: number, env: Folders): Promise<void> {
  process.kill(-pgid, 'SIGHUP');
  const status = await runCli(['status'], env);
  expect(status.stdout + status.stderr).toMatch(/running/i);
  expect(status.code).toBe(0);
  expect(hostIsRunning(env.CARAPACE_DATA_DIR)).toBe(true);
}

async function stopAndCheckClean(env: Folders, networkId: string): Promise<void> {
  const stop = await runCli(['stop'], env);
  expect(stop.stderr).toBe('');
  expect(stop.code).toBe(0);
  expect(stop.stdout).toMatch(/Sent SIGTERM to the Carapace host \(pid \d+\)/);
  expect(stop.stdout).toMatch(/stopped after [\d.]+ s/);
  expect(hostIsRunning(env.CARAPACE_DATA_DIR)).toBe(false);
  expect(await gatewayNetworkOf(env.CARAPACE_DATA_DIR)).toBeUndefined();
  if (firewall) {
    const left = await findLeftovers(docker, { idleDataDir: env.CARAPACE_DATA_DIR });
    expect(left.chains).not.toContain(gatewayChainName(networkId));
  }
  const log = fs.readFileSync(path.join(env.CARAPACE_DATA_DIR, 'logs', 'carapace.log'), 'utf8');
  expect(log).toContain('received SIGHUP');
  expect(log).toContain('host stopped');
  const again = await runCli(['stop'], env);
  expect(again.stdout).toContain('nothing to stop');
}

await describeDocker('the host run in the background without systemd', () => {
  it('started as `start --no-console > /dev/null 2>&1 &` from a shell, survives SIGHUP and stops with carapace stop', async () => {
    const env = folders('recipe');
    // A session and process group of its own, as a terminal's shell has; the shell exits at once.
    const shell = spawn(
      'sh',
      ['-c', `"${process.execPath}" bin/carapace.js start --no-console > /dev/null 2>&1 &`],
      {
        cwd: ROOT,
        detached: true,
        stdio: 'ignore',
        env: { ...process.env, ...env },
      },
    );
    const pgid = shell.pid as number;
    const networkId = await waitForNetwork(env.CARAPACE_DATA_DIR);
    await hangUpAndCheck(pgid, env);
    await stopAndCheckClean(env, networkId);
  }, 240_000);

  it('started with `start --detach`, returns once running in a session of its own, survives SIGHUP to it, and stops cleanly', async () => {
    const env = folders('detach');
    const started = await runCli(['start', '--detach'], env);
    expect(started.stderr).toBe('');
    expect(started.code).toBe(0);
    const pid = Number(/pid (\d+)/.exec(started.stdout)?.[1]);
    expect(started.stdout).toContain('carapace stop');
    expect(fs.readFileSync(path.join(env.CARAPACE_DATA_DIR, 'host.pid'), 'utf8').trim()).toBe(String(pid));
    // Returned once the host was up: its runtime's network is there already.
    const networkId = (await gatewayNetworkOf(env.CARAPACE_DATA_DIR)) ?? '';
    expect(networkId).not.toBe('');
    await hangUpAndCheck(pid, env);
    const again = await runCli(['start', '--detach'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already running');
    await stopAndCheckClean(env, networkId);
  }, 240_000);
});
