import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../config/load-config.ts';
import { resolvePaths, type CarapacePaths } from '../config/paths.ts';
import type { HostConfig } from '../config/schema.ts';

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const EXAMPLE_CONFIG_FILE = path.join(PROJECT_ROOT, 'config', 'config.example.toml');

export interface CliContext {
  io: CliIo;
  paths: CarapacePaths;
  /** Parsed on first use, so commands that need no config (gate classify) work with a broken one. */
  config(): HostConfig;
  out(line: string): void;
  err(line: string): void;
}

export class UsageError extends Error {}

export function createCliContext(io: CliIo): CliContext {
  const paths = resolvePaths({ env: io.env, cwd: io.cwd });
  let config: HostConfig | undefined;
  return {
    io,
    paths,
    config: () => (config ??= loadConfig({ configFile: paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE })),
    out: (line) => io.stdout.write(`${line}\n`),
    err: (line) => io.stderr.write(`${line}\n`),
  };
}

export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
