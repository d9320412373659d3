/** The reference MCP servers from npm as tests and benches start them. */
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { checkMcpServers } from '../../host/cli/commands/doctor-service-checks.ts';
import { createCliContext } from '../../host/cli/cli-context.ts';
import { loadConfig } from '../../host/config/load-config.ts';
import { freePort } from './loopback-server.ts';

const resolve = createRequire(import.meta.url).resolve;
export const EVERYTHING_SERVER = resolve('@modelcontextprotocol/server-everything/dist/index.js');
export const MEMORY_SERVER = resolve('@modelcontextprotocol/server-memory/dist/index.js');

/** A server declared harmless on every count. */
export const CLEAN_TRUST = {
  public_source: false,
  secret_data: false,
  public_sink: false,
  dangerous_writes: false,
} as const;

/** The memory server as a group's notebook: a stdio service keeping its graph where MEMORY_FILE_PATH says. */
export const memoryNotebook = () => ({
  type: 'stdio',
  command: process.execPath,
  args: [MEMORY_SERVER],
  env: ['MEMORY_FILE_PATH'],
  allow_non_admin: true,
  ...CLEAN_TRUST,
});

/** server-everything over Streamable HTTP on a free loopback port, once it says it listens. */
export async function startEverythingHttp(): Promise<{ url: string; stop(): void }> {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING_SERVER, 'streamableHttp'], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((done, fail) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('listening')) done();
    });
    child.once('exit', (code) => fail(new Error(`server-everything exited (${code})`)));
  });
  return { url: `http://127.0.0.1:${port}/mcp`, stop: () => child.kill() };
}

/** `carapace doctor`'s MCP check on a config folder holding these config.toml lines (data in its data/). */
export function doctorMcpServers(configDir: string, lines: string[]): ReturnType<typeof checkMcpServers> {
  fs.writeFileSync(path.join(configDir, 'config.toml'), lines.join('\n'));
  const ctx = createCliContext(
    {
      stdout: new PassThrough(),
      stderr: new PassThrough(),
      stdin: new PassThrough(),
      env: { CARAPACE_CONFIG_DIR: configDir, CARAPACE_DATA_DIR: path.join(configDir, 'data') },
      cwd: configDir,
    },
    loadConfig,
  );
  return checkMcpServers(ctx);
}
