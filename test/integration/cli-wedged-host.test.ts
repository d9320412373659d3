import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startProcess } from '../helpers/processes.ts';

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
    for (const args of [['status'], ['send', '--group', 'main', '--timeout', '60', 'hello?']]) {
      const started = Date.now();
      const r = await runCli(args, env);
      const seconds = (Date.now() - started) / 1000;
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`host pid ${host.pid} is not answering`);
      expect(r.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
      // 10 s response timeout plus the CLI's own start from sources on a loaded machine; far below 60 s.
      expect(seconds).toBeLessThan(40);
    }
    // A shorter --timeout bounds the wait for a host that does not answer as well.
    const short = await runCli(['send', '--group', 'main', '--timeout', '2', 'hello?'], env);
    expect(short.code).toBe(1);
    expect(short.stderr).toMatch(new RegExp(`host pid ${host.pid} is not answering \\(.* within 2 s\\)`));
  }, 120_000);
});
