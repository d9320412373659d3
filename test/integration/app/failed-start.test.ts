/**
 * A start that fails after a channel connected takes down exactly what came up: the channel's connection,
 * the sockets, the lock, every timer (the process ends by itself) and, with the real runtime, the agent
 * containers and the gateway network of its data folder.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../host/store/store.ts';
import { ensureAdminGroup } from '../../../host/admin/admin-group.ts';
import { dataFolderLabel, LABEL_DATA } from '../../../host/containers/run/data-folder-label.ts';
import { ensureDataDirs, resolvePaths } from '../../../host/config/paths.ts';
import { startFakeProvider, type FakeProvider } from '../../fakes/fake-provider.ts';
import type { FailedStartReport } from '../../fakes/failed-start-host.ts';
import { describeDocker } from '../../helpers/docker-available.ts';
import { ROOT } from '../../helpers/processes.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function folders(configToml: string) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-failstart-')));
  dirs.push(dir);
  const env = { CARAPACE_CONFIG_DIR: path.join(dir, 'config'), CARAPACE_DATA_DIR: path.join(dir, 'data') };
  fs.mkdirSync(env.CARAPACE_CONFIG_DIR, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(env.CARAPACE_CONFIG_DIR, 'config.toml'), configToml);
  return { dir, env, paths: resolvePaths({ env, cwd: dir }) };
}

/**
 * Runs the failing start in its own process. `endedByItself` is false when the process was still alive 20 s
 * after it reported: something it left open kept its event loop running (it is killed then).
 */
function runFailedStart(
  env: NodeJS.ProcessEnv,
): Promise<{ endedByItself: boolean; code: number | null; report: FailedStartReport; log: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'test/fakes/failed-start-host.ts')],
      // tsx's cache off: on Node 22.22+/24.11+ its hooks run on the main thread, and with a cold cache (every
      // fresh CI machine) its writes (FSReqPromise, CloseReq) are still in flight when the report is taken.
      {
        cwd: ROOT,
        env: { ...process.env, ...env, TSX_DISABLE_CACHE: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let log = '';
    let killed = false;
    let grace: NodeJS.Timeout | undefined;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.endsWith('\n') && !grace)
        grace = setTimeout(() => {
          killed = true;
          child.kill('SIGKILL');
        }, 20_000);
    });
    child.stderr.on('data', (d: Buffer) => (log += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(grace);
      try {
        const report = JSON.parse(out.trim().split('\n').at(-1) ?? '') as FailedStartReport;
        resolve({ endedByItself: !killed, code, report, log });
      } catch {
        reject(new Error(`no report from the failed start (exit ${code}):\n${out}\n${log}`));
      }
    });
  });
}

/** Resources that would keep a process alive (stdio pipes are the test's own). */
const keepingAlive = (resources: string[]) =>
  resources.filter((r) => !/^(PipeWrap|TTYWrap|FSReqCallback)$/.test(r));

describe('a host start that fails after a channel connected', () => {
  it('closes the channel, the sockets, the lock and every timer, and names the failed step', async () => {
    const { env } = folders('');
    const { endedByItself, code, report, log } = await runFailedStart(env);
    expect(report.resources, 'the process did not end by itself').toSatisfy(() => endedByItself);
    expect(code, log).toBe(0);
    expect(report.step).toBe('starting the broken channel');
    expect(report.error).toMatch(
      /starting the broken channel failed: the broken network refused the bot token/,
    );
    expect(report.channelConnectionClosed).toBe(true);
    expect(report.channelSocketAnswers).toBe(false);
    expect(report.consoleSocketAnswers).toBe(false);
    expect(report.lockFree).toBe(true);
    expect(keepingAlive(report.resources), log).toEqual([]);
  }, 60_000);
});

await describeDocker('a host start with the real agent runtime that fails after a channel connected', () => {
  let fake: FakeProvider | undefined;
  afterAll(async () => {
    await fake?.close();
  });

  it('leaves no container or network of its data folder in Docker', async () => {
    const docker = new Docker();
    fake = await startFakeProvider({ apiKey: 'sk-failed-start' });
    const suffix = Math.random().toString(16).slice(2, 10);
    const { env, paths } = folders(
      [
        '[provider]',
        `base_url = "${fake.openaiBaseUrl}"`,
        'api_key_env = "FAILED_START_KEY"',
        'model = "fake-model"',
        '[containers]',
        `gateway_network = "carapace-failstart-${suffix}"`,
        '[runs.prestart]',
        'count = 1',
        'idle_ms = 600000',
        '',
      ].join('\n'),
    );
    // The admin group ran a moment ago, so the runtime pre-starts a container for it at start.
    ensureDataDirs(paths);
    const store = openStore({ file: paths.databaseFile, redact: (s) => s });
    ensureAdminGroup(store);
    const run = store.runs.start('main', 1, 0);
    store.runs.finish(run.id, 'succeeded', 'replied');
    store.close();

    const label = `${LABEL_DATA}=${dataFolderLabel(paths.dataDir)}`;
    try {
      const { endedByItself, code, report, log } = await runFailedStart({
        ...env,
        FAILED_START_KEY: 'sk-failed-start',
        FAILED_START_RUNNER: 'production',
      });
      expect(report.resources, 'the process did not end by itself').toSatisfy(() => endedByItself);
      expect(code, log).toBe(0);
      expect(report.step).toBe('starting the broken channel');
      expect(report.channelConnectionClosed).toBe(true);
      expect(report.consoleSocketAnswers).toBe(false);
      expect(report.lockFree).toBe(true);
      expect(keepingAlive(report.resources), log).toEqual([]);
      expect(await docker.listContainers({ all: true, filters: { label: [label] } })).toEqual([]);
      expect(await docker.listNetworks({ filters: { label: [label] } })).toEqual([]);
    } finally {
      for (const c of await docker.listContainers({ all: true, filters: { label: [label] } }))
        await docker
          .getContainer(c.Id)
          .remove({ force: true })
          .catch(() => undefined);
      for (const n of await docker.listNetworks({ filters: { label: [label] } }))
        await docker
          .getNetwork(n.Id)
          .remove()
          .catch(() => undefined);
    }
  }, 300_000);
});
