import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `carapace` CLI as a separate process: the build the global setup made from the current
 * sources (test/global-setup.ts), or the sources themselves when CARAPACE_FROM_SOURCE=1 is set.
 */
export function runCli(args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'carapace.js'), ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

/** Starts a TypeScript entry as a child process and resolves once it printed `ready`. */
export function startProcess(
  entry: string,
  env: NodeJS.ProcessEnv,
  args: string[] = [],
): Promise<{ child: ChildProcess; log: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, entry), ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const onData = (d: Buffer) => {
      output += d.toString();
      if (output.includes('ready\n')) resolve({ child, log: () => output });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    child.on('exit', (code, signal) =>
      reject(new Error(`${entry} exited (${code ?? signal}) before ready:\n${output}`)),
    );
  });
}

/**
 * Waits for a condition that another process (or a double over the network) makes true, polling because
 * no event says so; fails with `what` after the timeout. The one poll of the suite.
 */
export async function waitFor<T>(
  what: string,
  fn: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
