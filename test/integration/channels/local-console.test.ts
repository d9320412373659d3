import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_CONFIG_FILE } from '../../../host/cli/cli-context.ts';
import { loadConfig } from '../../../host/config/load-config.ts';
import { resolvePaths } from '../../../host/config/paths.ts';
import { startHost, type RunningHost } from '../../../host/app/host.ts';
import { staticRunner } from '../../helpers/static-runner.ts';
import { createEchoRunner } from '../../fakes/echo-runner.ts';
import { ROOT, runCli } from '../../helpers/processes.ts';

/** A host on temporary folders, wired as in production but with the echo runner double. */
async function startEchoHost(prefix: string, configToml?: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const env: NodeJS.ProcessEnv = {
    CARAPACE_CONFIG_DIR: path.join(dir, 'cfg'),
    CARAPACE_DATA_DIR: path.join(dir, 'data'),
  };
  if (configToml) {
    fs.mkdirSync(env.CARAPACE_CONFIG_DIR as string);
    fs.writeFileSync(path.join(env.CARAPACE_CONFIG_DIR as string, 'config.toml'), configToml);
  }
  const paths = resolvePaths({ env, cwd: dir });
  const host = await startHost({
    paths,
    config: loadConfig({ configFile: paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE }),
    createRunner: staticRunner(createEchoRunner()),
    logger: pino({ level: 'silent' }),
    redact: (s) => s,
  });
  return { dir, env, host };
}

describe('local console through the real CLI', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let host: RunningHost;

  beforeAll(async () => {
    ({ dir, env, host } = await startEchoHost(
      'carapace-console-',
      '[assistant]\nname = "Kit"\n[runs]\nmax_attempts = 1\n',
    ));
  });
  afterAll(async () => {
    await host.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('sends a message to the admin group and prints the reply', async () => {
    const res = await runCli(['send', '--group', 'main', 'hello host'], env);
    expect(res.stderr).toBe('');
    expect(res.stdout).toBe('echo: hello host\n');
    expect(res.code).toBe(0);
  });

  it('answers in a non-admin group only when triggered', async () => {
    expect((await runCli(['groups', 'add', 'family', '--channel', 'local'], env)).code).toBe(0);
    const quiet = await runCli(['send', '--group', 'family', 'dinner at eight'], env);
    expect(quiet.code).toBe(0);
    expect(quiet.stdout).toBe('');
    expect(quiet.stderr).toMatch(/mention @Kit/);
    const asked = await runCli(['send', '--group', 'family', '@kit what time is dinner?'], env);
    expect(asked.stdout).toBe('echo: @kit what time is dinner?\n');
    expect(asked.code).toBe(0);
  });

  it('reads the text from stdin with "send -", whole, newlines and quotes included', async () => {
    const text = `a "quoted" line\n${'long '.repeat(2000)}\nlast line`;
    const res = await runCli(['send', '--group', 'main', '-'], env, text);
    expect(res.code).toBe(0);
    expect(res.stdout).toBe(`echo: ${text.trim()}\n`);
  });

  it('exits 1 when the only reply is the notice that the message could not be answered', async () => {
    const res = await runCli(['send', '--group', 'main', '[fail-once] this run fails'], env);
    expect(res.stdout).toMatch(/could not answer that \(scripted failure\)/);
    expect(res.stderr).toMatch(/could not answer/);
    expect(res.code).toBe(1);
  });

  it('ends quietly when the reader of its output goes away (EPIPE)', async () => {
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'carapace.js'), 'status'], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise((r) => child.on('close', r));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it('refuses an unknown group with a way to fix it', async () => {
    const res = await runCli(['send', '--group', 'nope', 'hi'], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/carapace groups add nope --channel local/);
  });

  it('shows the running host in status', async () => {
    const res = await runCli(['status', '--json'], env);
    expect(res.code).toBe(0);
    const status = JSON.parse(res.stdout) as {
      running: boolean;
      host: { groups: { id: string }[]; database: { bytes: number; rows: { messages: number } } };
    };
    expect(status.running).toBe(true);
    expect(status.host.groups.map((g) => g.id).sort()).toEqual(['family', 'main']);
    // The sizes retention keeps in bounds: the file, and rows per table (the messages sent above).
    expect(status.host.database.bytes).toBeGreaterThan(0);
    expect(status.host.database.rows.messages).toBeGreaterThan(0);
    const text = await runCli(['status'], env);
    expect(text.stdout).toMatch(/^database: [\d.]+ MiB \(WAL [\d.]+ MiB\); about \d+ messages/m);
    expect(text.stdout).toMatch(/^runner: docker \(each turn a container on the local engine\)$/m);
    // One group a line, aligned, the admin group marked.
    expect(text.stdout).toContain('groups (2):\n');
    expect(text.stdout).toMatch(/^ {2}main {4}local {2}admin$/m);
    expect(text.stdout).toMatch(/^ {2}family {2}local$/m);
  });
});

describe('owner commands through the real CLI', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let host: RunningHost;

  beforeAll(async () => {
    ({ dir, env, host } = await startEchoHost('carapace-console-cmd-'));
  });
  afterAll(async () => {
    await host.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('prints the host answer to an owner command instead of running the agent', async () => {
    const pending = await runCli(['send', '--group', 'main', 'pending'], env);
    expect(pending.code).toBe(0);
    expect(pending.stdout).not.toMatch(/echo:/);
    expect(pending.stdout.trim()).not.toBe('');
    const unknown = await runCli(['send', '--group', 'main', 'approve ab12cd'], env);
    expect(unknown.code).toBe(0);
    expect(unknown.stdout).toMatch(/ab12cd/i);
    expect(unknown.stderr).not.toMatch(/stored as context/);
  });
});
