import path from 'node:path';
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
