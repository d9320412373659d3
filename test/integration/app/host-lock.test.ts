import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { acquireHostLock, holdHostLockQuietly, HostLockedError } from '../../../host/store/host-lock.ts';
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

it('a quiet hold (restore) keeps hosts out without writing the lock file or a pid file', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-lock-'));
  dirs.push(dir);
  acquireHostLock(dir).release();
  const lockFile = path.join(dir, 'host.lock');
  const bytes = fs.readFileSync(lockFile);
  const quiet = holdHostLockQuietly(dir);
  expect(quiet.created).toBe(false);
  expect(() => acquireHostLock(dir)).toThrow(HostLockedError);
  expect(() => holdHostLockQuietly(dir)).toThrow(HostLockedError);
  expect(fs.existsSync(path.join(dir, 'host.pid'))).toBe(false);
  quiet.release();
  expect(fs.readFileSync(lockFile).equals(bytes)).toBe(true);
  expect(fs.readdirSync(dir)).toEqual(['host.lock']);

  // Removing the files while still holding the lock: the next host makes its own and gets it.
  fs.writeFileSync(path.join(dir, 'host.pid'), '4242\n');
  holdHostLockQuietly(dir).release({ removeFiles: true });
  expect(fs.readdirSync(dir)).toEqual([]);
  acquireHostLock(dir).release();
});
