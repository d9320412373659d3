import { resolvePaths, type CarapacePaths } from '../config/paths.ts';
import type { HostConfig } from '../config/schema.ts';
import { EXAMPLE_CONFIG_FILE, PROJECT_ROOT } from '../config/project-files.ts';

export { EXAMPLE_CONFIG_FILE, PROJECT_ROOT };

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export interface CliContext {
  io: CliIo;
  paths: CarapacePaths;
  /** Parsed on first use, so commands that need no config (gate classify) work with a broken one. */
  config(): HostConfig;
  out(line: string): void;
  err(line: string): void;
}

export type ConfigLoader = (files: { configFile: string; exampleFile: string }) => HostConfig;

export class UsageError extends Error {}

/**
 * `loadConfig` is passed in rather than imported: the schema is most of a client command's start-up
 * time, and commands that only talk to a running host (send, chat, status) never need it.
 */
export function createCliContext(io: CliIo, loadConfig?: ConfigLoader): CliContext {
  const paths = resolvePaths({ env: io.env, cwd: io.cwd });
  let config: HostConfig | undefined;
  return {
    io,
    paths,
    config: () => {
      if (!loadConfig) throw new Error('this command was declared as a client of the host and has no config');
      return (config ??= loadConfig({ configFile: paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE }));
    },
    out: (line) => io.stdout.write(`${line}\n`),
    err: (line) => io.stderr.write(`${line}\n`),
  };
}

export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
