import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startProcess } from '../../helpers/processes.ts';

/**
 * A host that holds its socket but does not answer (stopped with SIGSTOP: the kernel still accepts
 * connections into the listen backlog) must be reported as such, never waited on forever.
 */
describe('the CLI against a host that does not answer', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let host: ChildProcess;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-wedged-'));
    env = { CARAPACE_DATA_DIR: path.join(dir, 'data'), CARAPACE_CONFIG_DIR: path.join(dir, 'cfg') };
    ({ child: host } = await startProcess('test/fakes/fake-runner-host.ts', env));
  });
  afterAll(async () => {
    host.kill('SIGCONT');
    host.kill('SIGTERM');
    await new Promise((r) => (host.exitCode === null ? host.once('exit', r) : r(null)));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers while it runs, then status and send fail within their timeouts naming the pid', async () => {
    const ok = await runCli(['send', '--group', 'main', 'are you there'], env);
    expect(ok.stdout).toBe('echo: are you there\n');

    host.kill('SIGSTOP');
    // Each command's own bound, not the test's clock, ends the wait: the message names it.
    for (const args of [
      ['status', '--timeout', '1'],
      ['send', '--group', 'main', '--timeout', '1', 'hello?'],
    ]) {
      const r = await runCli(args, env);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`host pid ${host.pid} is not answering \\(.* within 1 s\\)`));
      expect(r.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
    }
    expect((await runCli(['status', '--timeout', 'soon'], env)).stderr).toContain(
      '--timeout must be a positive number of seconds',
    );
  }, 120_000);
});
