/**
 * CPU time of one `carapace` invocation, as a user runs it (the compiled build through bin/carapace.js),
 * against `node -e 0` in the same run: `--help`, and `send` answered by a live host (the production
 * wiring with the echo runner, so the figure is the client's own cost, not a model's). Linux only: a
 * child's CPU time is read from this process's reaped-children counters in /proc/self/stat.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, startProcess } from '../../test/helpers/processes.ts';
import { isMain, median, printFigures } from './stats.ts';

const SAMPLES = 21;
/** USER_HZ: the unit of the times in /proc/<pid>/stat; 100 on every Linux this runs on. */
const TICK_MS = 10;

function reapedChildrenCpuMs(): number {
  // Fields after the command name (which may hold spaces): cutime and cstime are the 14th and 15th.
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) * TICK_MS;
}

async function cpuOf(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const before = reapedChildrenCpuMs();
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: 'ignore' });
    child.on('error', reject);
    child.on('close', resolve);
  });
  if (code !== 0) throw new Error(`node ${args.join(' ')} exited ${code}`);
  return reapedChildrenCpuMs() - before;
}

export async function benchCliStartup(): Promise<Record<string, number | string>> {
  if (!fs.existsSync('/proc/self/stat')) return { skipped: 'needs Linux /proc to read child CPU time' };
  // The figure is for what users run: build first, so the compiled CLI is current.
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'ignore' });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-cli-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CARAPACE_DATA_DIR: path.join(root, 'data'),
    CARAPACE_CONFIG_DIR: path.join(root, 'config'),
  };
  delete env.CARAPACE_FROM_SOURCE;
  fs.mkdirSync(path.join(root, 'config'), { recursive: true });
  const host = await startProcess('test/fakes/fake-runner-host.ts', env);
  const cli = path.join(ROOT, 'bin', 'carapace.js');
  const runs = {
    'node -e 0': ['-e', '0'],
    'carapace --help': [cli, '--help'],
    'carapace send': [cli, 'send', '--group', 'main', 'hello'],
  };
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
  try {
    // Interleaved, so load from other processes weighs on all three alike.
    for (let i = 0; i < SAMPLES; i++) {
      for (const [name, args] of Object.entries(runs)) samples[name]?.push(await cpuOf(args, env));
    }
  } finally {
    host.child.kill('SIGTERM');
    await new Promise((r) => host.child.once('exit', r));
    fs.rmSync(root, { recursive: true, force: true });
  }
  const base = median(samples['node -e 0'] ?? []);
  const help = median(samples['carapace --help'] ?? []);
  const send = median(samples['carapace send'] ?? []);
  return {
    samples: SAMPLES,
    'node -e 0 CPU ms (median, baseline)': base,
    'carapace --help CPU ms (median)': help,
    'carapace --help / node -e 0': Number((help / base).toFixed(2)),
    'carapace send CPU ms (median)': send,
    'carapace send / node -e 0': Number((send / base).toFixed(2)),
    'targets on this machine': '--help < 150 ms, send < 250 ms',
  };
}

if (isMain(import.meta.url)) printFigures('CLI start-up CPU', await benchCliStartup());
