import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { errorCode } from '../../errors/error-code.ts';

export const DEFAULT_BUILD_LOCK = path.join(os.tmpdir(), 'carapace-image-build.lock');

/**
 * Runs `fn` while holding an exclusive lock file, so that two processes (the host starting and
 * `carapace image build`, or parallel test files) do not bootstrap or build the same image twice.
 * A lock whose owner process is gone is taken over.
 */
export async function withBuildLock<T>(
  lockFile: string,
  fn: () => Promise<T>,
  onWait: (message: string) => void = () => {},
): Promise<T> {
  let announced = false;
  let unreadable = 0;
  for (;;) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
      break;
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
      const owner = Number.parseInt(readOrEmpty(lockFile), 10);
      if (!Number.isInteger(owner) || !processAlive(owner)) {
        // Stale: the owner died without cleaning up. An empty file may be one being written
        // right now, so it counts as stale only when it stays empty.
        unreadable = Number.isInteger(owner) ? 0 : unreadable + 1;
        if (Number.isInteger(owner) || unreadable > 20) fs.rmSync(lockFile, { force: true });
        await sleep(100);
        continue;
      }
      if (!announced) {
        onWait(`waiting for another image build (pid ${owner}, lock ${lockFile})`);
        announced = true;
      }
      await sleep(500);
    }
  }
  try {
    return await fn();
  } finally {
    if (readOrEmpty(lockFile) === String(process.pid)) fs.rmSync(lockFile, { force: true });
  }
}

function readOrEmpty(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) === 'EPERM';
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
