import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ensureDataDirs } from '../../config/paths.ts';
import { hostIsRunning } from '../../store/host-lock.ts';
import { PROJECT_ROOT, type CliContext } from '../cli-context.ts';

/** Set for the detached host: it reports "ready" over the IPC channel its launcher opened, then lets go. */
export const READY_CHANNEL_ENV = 'CARAPACE_READY_CHANNEL';

export type ReadyMessage = { type: 'ready'; pid: number };

/**
 * `carapace start --detach`: the host in a session of its own (setsid), so closing the terminal or logging
 * out sends it no SIGHUP, with its output appended to data/logs/carapace.log and its pid in data/host.pid.
 * Returns once the host has started (or failed to, with the end of its log), so a script can go on.
 */
export async function startDetached(ctx: CliContext): Promise<number> {
  const { paths } = ctx;
  if (hostIsRunning(paths.dataDir)) {
    ctx.err(
      `A Carapace host is already running on ${paths.dataDir} (carapace status; carapace stop ends it).`,
    );
    return 1;
  }
  ensureDataDirs(paths);
  const logFile = path.join(paths.logsDir, 'carapace.log');
  const out = fs.openSync(logFile, 'a', 0o600);
  const before = fs.fstatSync(out).size;
  // The journal is for the service; a detached host logs to its file even when started from inside a unit.
  const { JOURNAL_STREAM: _journal, ...env } = ctx.io.env;
  const child = spawn(
    process.execPath,
    [path.join(PROJECT_ROOT, 'bin', 'carapace.js'), 'start', '--no-console'],
    {
      cwd: ctx.io.cwd,
      detached: true,
      stdio: ['ignore', out, out, 'ipc'],
      env: {
        ...env,
        // Absolute, so the host finds the same folders whatever its working directory becomes.
        CARAPACE_CONFIG_DIR: paths.configDir,
        CARAPACE_DATA_DIR: paths.dataDir,
        [READY_CHANNEL_ENV]: '1',
      },
    },
  );
  fs.closeSync(out);
  const outcome = await new Promise<
    { ready: true } | { ready: false; code: number | null; signal: string | null }
  >((resolve) => {
    child.once('message', (m: ReadyMessage) => m.type === 'ready' && resolve({ ready: true }));
    child.once('exit', (code, signal) => resolve({ ready: false, code, signal }));
  });
  if (!outcome.ready) {
    const tail = fs.readFileSync(logFile, 'utf8').slice(before).trimEnd().split('\n').slice(-15);
    ctx.err(`The host stopped while starting (${outcome.code ?? outcome.signal}); the end of ${logFile}:`);
    for (const line of tail) ctx.err(`  ${line}`);
    return 1;
  }
  child.disconnect();
  child.unref();
  ctx.out(
    `Carapace is running in the background (pid ${child.pid}); talk to it with: npx carapace chat; ` +
      `logs: npx carapace logs -f (${logFile}); stop it with: npx carapace stop`,
  );
  return 0;
}
