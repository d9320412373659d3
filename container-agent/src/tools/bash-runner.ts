/**
 * Runs one bash command with a time limit and a cap on captured output. The command gets its own
 * process group so a timeout or abort kills everything it started, and leftovers that still hold the
 * output pipes after bash exits are killed too rather than hanging the run.
 */
import { spawn } from 'node:child_process';

export interface BashRunOptions {
  command: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** Per stream. */
  maxOutputBytes: number;
  signal: AbortSignal;
}

export interface BashRunResult {
  exitCode: number | null;
  /** The signal that ended it, if any. */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  aborted: boolean;
  /** Bytes left out of stdout + stderr because of the cap. */
  omittedBytes: number;
}

/** How long leftovers may hold the pipes after bash itself exited. */
const PIPE_GRACE_MS = 300;

export function runBash(options: BashRunOptions): Promise<BashRunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', options.command], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const capture = () => ({ chunks: [] as Buffer[], bytes: 0 });
    const out = capture();
    const err = capture();
    let omittedBytes = 0;
    let timedOut = false;
    let aborted = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;

    const collect = (target: ReturnType<typeof capture>) => (chunk: Buffer) => {
      const room = options.maxOutputBytes - target.bytes;
      if (room <= 0) {
        omittedBytes += chunk.length;
        return;
      }
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      target.chunks.push(kept);
      target.bytes += kept.length;
      omittedBytes += chunk.length - kept.length;
    };
    child.stdout.on('data', collect(out));
    child.stderr.on('data', collect(err));

    const killGroup = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    const onAbort = (): void => {
      aborted = true;
      killGroup();
    };
    options.signal.addEventListener('abort', onAbort, { once: true });
    let graceTimer: ReturnType<typeof setTimeout> | undefined;

    const finish = (): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (graceTimer) clearTimeout(graceTimer);
      options.signal.removeEventListener('abort', onAbort);
      killGroup();
      child.stdout.destroy();
      child.stderr.destroy();
      resolve({
        exitCode: exit?.code ?? null,
        signal: exit?.signal ?? null,
        stdout: Buffer.concat(out.chunks).toString('utf8'),
        stderr: Buffer.concat(err.chunks).toString('utf8'),
        timedOut,
        aborted,
        omittedBytes,
      });
    };

    child.on('error', (error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      reject(error);
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      graceTimer = setTimeout(finish, PIPE_GRACE_MS);
    });
    child.on('close', finish);
    if (options.signal.aborted) onAbort();
  });
}
