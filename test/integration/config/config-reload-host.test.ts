/**
 * Config reload through the real host wiring (startHost) with an in-process echo runner: the socket route
 * `carapace config set` uses applies a change to the running host, and a change after which the owner can
 * no longer be reached is rolled back, with the previous file written back and the owner told.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { EXAMPLE_CONFIG_FILE } from '../../../host/cli/cli-context.ts';
import { createLocalClient } from '../../../host/channels/local/local-client.ts';
import { createConfigFileStore } from '../../../host/config/config-file-store.ts';
import { resolvePaths, type CarapacePaths } from '../../../host/config/paths.ts';
import { lastGoodFile, loadStartConfig } from '../../../host/config/safe-start.ts';
import { startHost, type RunningHost } from '../../../host/app/host.ts';
import { staticRunner } from '../../helpers/static-runner.ts';
import { createEchoRunner } from '../../fakes/echo-runner.ts';

let dir: string;
let paths: CarapacePaths;
let host: RunningHost;

const FILE = '# mine\n[assistant]\nname = "Andy"\n';

beforeEach(async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-reload-')));
  paths = resolvePaths({
    env: { CARAPACE_CONFIG_DIR: path.join(dir, 'config'), CARAPACE_DATA_DIR: path.join(dir, 'data') },
    cwd: dir,
  });
  fs.mkdirSync(paths.configDir, { recursive: true });
  fs.writeFileSync(paths.configFile, FILE);
  const start = loadStartConfig({ configFile: paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE });
  host = await startHost({
    paths,
    config: start.applied.config,
    reload: { start, exampleFile: EXAMPLE_CONFIG_FILE, watchDebounceMs: 60_000 },
    createRunner: staticRunner(createEchoRunner()),
    logger: pino({ level: 'silent' }),
    redact: (s) => s,
  });
});

afterEach(async () => {
  await host?.stop('end of test');
  fs.rmSync(dir, { recursive: true, force: true });
});

const client = () => createLocalClient(paths.socketFile);

it('keeps the started config as the last good one and applies a change through the socket', async () => {
  expect(fs.readFileSync(lastGoodFile(paths.configFile), 'utf8')).toBe(FILE);
  const files = createConfigFileStore({ configFile: paths.configFile });
  const next = FILE.replace('"Andy"', '"Max"');
  files.write(next, files.read().hash);
  const result = await client().reloadConfig();
  expect(result).toMatchObject({ kind: 'applied', ok: true });
  const status = (await client().getJson('/v1/status')) as { assistant: string };
  expect(status.assistant).toBe('Max');
  expect(fs.readFileSync(lastGoodFile(paths.configFile), 'utf8')).toBe(next);
  expect(await client().reloadConfig()).toMatchObject({ kind: 'unchanged', ok: true });
});

it('rolls back a change after which notices would not reach the owner, restores the file and says so', async () => {
  const files = createConfigFileStore({ configFile: paths.configFile });
  const bad = `${FILE.replace('"Andy"', '"Max"')}[admin]\nnotify = ["telegram"]\n`;
  files.write(bad, files.read().hash);
  const result = await client().reloadConfig();
  expect(result.kind).toBe('rolled-back');
  expect(result.ok).toBe(false);
  expect(result.detail).toMatch(/\[admin\] notify names "telegram", which has no linked admin chat/);
  expect(fs.readFileSync(paths.configFile, 'utf8')).toBe(FILE);
  const status = (await client().getJson('/v1/status')) as { assistant: string };
  expect(status.assistant).toBe('Andy');
  const notices = host.store.db.prepare("SELECT text FROM outbox WHERE group_id = 'main'").all() as {
    text: string;
  }[];
  expect(notices.some((n) => /applied and then rolled back/.test(n.text))).toBe(true);
  expect(files.history().map((b) => files.backupText(b))[0]).toBe(bad);
});
