import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../../host/store/store.ts';
import { runCli, type CliResult } from '../../helpers/run-cli.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
let configDir: string;
let dataDir: string;

beforeEach(() => {
  const root = tempDir();
  configDir = path.join(root, 'config');
  dataDir = path.join(root, 'data');
  fs.mkdirSync(configDir);
  fs.mkdirSync(dataDir, { mode: 0o700 });
});

function cli(...argv: string[]): Promise<CliResult> {
  return cliWithInput('', ...argv);
}

function cliWithInput(input: string, ...argv: string[]): Promise<CliResult> {
  return runCli({ configDir, dataDir }, argv, input);
}

describe('carapace (command dispatch)', () => {
  it('prints help listing every command for "help" and exits 0', async () => {
    for (const arg of ['help', '--help', '-h']) {
      const r = await cli(arg);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^Usage: carapace <command>/);
      for (const name of ['start', 'send', 'chat', 'groups', 'status', 'doctor', 'audit'])
        expect(r.stdout).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
      expect(r.stdout).toContain('CARAPACE_CONFIG_DIR');
    }
  });

  it('prints help but exits 2 when no command is given', async () => {
    const r = await cli();
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/^Usage: carapace/);
  });

  it('exits 2 on an unknown command, naming it', async () => {
    const r = await cli('frobnicate', '--now');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^unknown command "frobnicate"/);
    expect(r.stderr).toContain('Usage: carapace');
    expect(r.stdout).toBe('');
  });
});

describe('carapace send', () => {
  it('exits 1 saying the host is not running when nobody listens on the socket', async () => {
    const r = await cli('send', '--group', 'main', 'hello there');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/not running/);
    expect(r.stderr).toContain(path.join(dataDir, 'carapace.sock'));
    expect(r.stderr).toMatch(/carapace start/);
  });

  it('needs no config: a broken config.toml is for start to report, not for a client of the host', async () => {
    fs.writeFileSync(path.join(configDir, 'config.toml'), '[assistant\nname = "Andy"\n');
    const r = await cli('send', '--group', 'main', 'hello');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/not running/);
  });

  it('exits 2 when the message text is missing, also from an empty stdin', async () => {
    for (const args of [
      ['send', '--group', 'main'],
      ['send', '-'],
    ]) {
      const r = await cli(...args);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/send needs the message text/);
    }
  });
});

describe('carapace start', () => {
  it('exits 2 with every problem of a bad config.toml, before anything starts', async () => {
    fs.writeFileSync(
      path.join(configDir, 'config.toml'),
      '[assistant]\nname = "two words"\n[runs]\nmax_concurrent = 0\n',
    );
    const r = await cli('start', '--no-console');
    expect(r.code).toBe(2);
    const file = path.join(configDir, 'config.toml');
    expect(r.stderr).toContain(`${file}: assistant.name: must be one word`);
    expect(r.stderr).toContain(`${file}: runs.max_concurrent: `);
    expect(r.stderr).toContain('(for example: name = "Andy")');
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });

  it('exits 2 with the line and column of a TOML syntax error', async () => {
    fs.writeFileSync(path.join(configDir, 'config.toml'), '[assistant\nname = "Andy"\n');
    const r = await cli('start', '--no-console');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/config\.toml: line 1, column \d+/);
  });
});

describe('carapace audit', () => {
  it('on an empty data folder says there is nothing yet, exits 0, and creates no database', async () => {
    const r = await cli('audit', '--tail', '5');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/no database at .*carapace\.db yet; nothing has been audited/);
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });

  it('says so when the database holds no audit rows yet, keeping --json output empty', async () => {
    openStore({ file: path.join(dataDir, 'carapace.db') }).close();
    const r = await cli('audit', '--json');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/no audit rows yet/);
  });

  it('prints the newest N rows, oldest first, as text or JSON', async () => {
    const store = openStore({ file: path.join(dataDir, 'carapace.db') });
    for (let i = 1; i <= 7; i += 1)
      store.audit.record({
        operation: `op${i}`,
        decision: i % 2 ? 'allow' : 'deny',
        groupId: 'main',
        reason: `r${i}`,
      });
    store.close();

    const text = await cli('audit', '--tail', '5');
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines).toHaveLength(5);
    expect(lines.map((l) => l.split('\t').slice(1, 5))).toEqual([
      ['main', '-', 'op3', 'allow'],
      ['main', '-', 'op4', 'deny'],
      ['main', '-', 'op5', 'allow'],
      ['main', '-', 'op6', 'deny'],
      ['main', '-', 'op7', 'allow'],
    ]);

    const json = await cli('audit', '--tail', '2', '--json');
    expect(
      json.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { operation: string }).operation),
    ).toEqual(['op6', 'op7']);
  });

  it.each(['0', '-3', 'ten', '10001', '2.5'])('exits 2 for --tail=%s', async (n) => {
    const r = await cli('audit', `--tail=${n}`);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--tail must be a whole number/);
  });
});

describe('carapace gate classify', () => {
  it('answers every line but exits 2 when a --json line is not a JSON string', async () => {
    const r = await cliWithInput('"ls"\nnot json\n', 'gate', 'classify', '--json');
    expect(r.code).toBe(2);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[1] ?? '')).toMatchObject({ line: 2 });
    const good = await cliWithInput('"ls"\n', 'gate', 'classify', '--json');
    expect(good.code).toBe(0);
  });
});
