import fs from 'node:fs';
import path from 'node:path';
import { beforeEach } from 'vitest';
import { PassThrough } from 'node:stream';
import { main } from '../../host/cli/main.ts';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs one `carapace` invocation in-process against the given folders, with `input` on stdin. */
export async function runCli(
  dirs: { configDir: string; dataDir: string },
  argv: string[],
  input = '',
): Promise<CliResult> {
  const stdin = new PassThrough();
  stdin.end(input);
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const code = await main(argv, {
    stdout,
    stderr,
    stdin,
    env: { CARAPACE_CONFIG_DIR: dirs.configDir, CARAPACE_DATA_DIR: dirs.dataDir },
    cwd: path.dirname(dirs.dataDir),
  });
  return { code, stdout: out, stderr: err };
}

/**
 * A fresh config folder (made) and data folder (not made: commands make it) per test, and `carapace` run
 * against them.
 */
export function useCliFolders(tempDir: () => string) {
  const dirs = { configDir: '', dataDir: '' };
  beforeEach(() => {
    const root = tempDir();
    dirs.configDir = path.join(root, 'config');
    dirs.dataDir = path.join(root, 'data');
    fs.mkdirSync(dirs.configDir);
  });
  return { dirs, cli: (...argv: string[]) => runCli(dirs, argv) };
}
