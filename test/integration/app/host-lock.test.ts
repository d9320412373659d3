import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { acquireHostLock, HostLockedError } from '../../../host/store/host-lock.ts';
import { startProcess } from '../../helpers/processes.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

it('lets one host hold a data folder, and frees it the moment that host is killed', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-lock-'));
  dirs.push(dir);
  const env = { CARAPACE_CONFIG_DIR: path.join(dir, 'cfg'), CARAPACE_DATA_DIR: path.join(dir, 'data') };
  const host = await startProcess('test/fakes/fake-runner-host.ts', env);
  expect(() => acquireHostLock(env.CARAPACE_DATA_DIR)).toThrow(HostLockedError);
  const exited = new Promise((r) => host.child.on('exit', r));
  host.child.kill('SIGKILL');
  await exited;
  // No stale lock: the OS released it with the process.
  const lock = acquireHostLock(env.CARAPACE_DATA_DIR);
  expect(() => acquireHostLock(env.CARAPACE_DATA_DIR)).toThrow(/already running/);
  lock.release();
});
