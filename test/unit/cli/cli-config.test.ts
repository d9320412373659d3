import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
let configDir: string;
let configFile: string;

const FILE = `# my setup
[assistant]
name = "Andy" # the trigger word

[runs]
max_concurrent = 3
`;

beforeEach(() => {
  const root = tempDir();
  configDir = path.join(root, 'config');
  fs.mkdirSync(configDir);
  configFile = path.join(configDir, 'config.toml');
  fs.writeFileSync(configFile, FILE);
});

const cli = (...argv: string[]) => runCli({ configDir, dataDir: path.join(configDir, '..', 'data') }, argv);

describe('carapace config', () => {
  it('gets a value or a table from the effective config, defaults included', async () => {
    expect(await cli('config', 'get', 'assistant.name')).toMatchObject({ code: 0, stdout: '"Andy"\n' });
    expect((await cli('config', 'get', 'assistant')).stdout).toBe(
      'assistant.name = "Andy"\nassistant.timezone = "UTC"\n',
    );
    expect((await cli('config', 'get', 'assistant.nope')).code).toBe(1);
  });

  it('sets a value: shows the diff, keeps the comments, backs up the old file; diff, history, rollback', async () => {
    const set = await cli('config', 'set', 'assistant.name', '"Max"');
    expect(set.code).toBe(0);
    expect(set.stdout).toContain('assistant.name: "Andy" → "Max"');
    // No host runs in this test: the change waits for the next start.
    expect(set.stdout).toContain('no host is running; it applies when the host starts');
    expect(fs.readFileSync(configFile, 'utf8')).toBe(FILE.replace('"Andy"', '"Max"'));

    expect((await cli('config', 'diff')).stdout).toContain('assistant.name: "Andy" → "Max"');
    const history = await cli('config', 'history');
    // Each version says which keys the change that replaced it made.
    expect(history.stdout.trim().split('\n')[0]).toMatch(/^1\t\d{4}-\S+\tassistant\.name$/);

    const back = await cli('config', 'rollback');
    expect(back.code).toBe(0);
    expect(back.stdout).toContain('assistant.name: "Max" → "Andy"');
    expect(fs.readFileSync(configFile, 'utf8')).toBe(FILE);
    const after = (await cli('config', 'history')).stdout.trim().split('\n');
    expect(after.slice(0, 2).map((line) => line.split('\t')[2])).toEqual([
      'assistant.name',
      'assistant.name',
    ]);
  });

  it('refuses an invalid value with one line per problem and leaves the file alone', async () => {
    const r = await cli('config', 'set', 'runs.max_concurrent', '0');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/runs\.max_concurrent/);
    expect(fs.readFileSync(configFile, 'utf8')).toBe(FILE);
    const bare = await cli('config', 'set', 'assistant.name', 'Max');
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/strings need double quotes/);
  });

  it('lets the owner change a protected key, naming it', async () => {
    const r = await cli('config', 'set', 'gateway.daily_cap_usd', '50');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      'note: gateway.daily_cap_usd is protected (raises the daily spend cap from 5 USD to 50 USD)',
    );
    expect(fs.readFileSync(configFile, 'utf8')).toContain('[gateway]\ndaily_cap_usd = 50\n');
  });

  it('rollback with no backup is a usage error', async () => {
    expect((await cli('config', 'rollback')).code).toBe(2);
  });
});
