import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../../host/cli/main.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
let root: string;
let env: NodeJS.ProcessEnv;

beforeEach(() => {
  root = tempDir();
  env = {
    HOME: root,
    XDG_CONFIG_HOME: path.join(root, 'xdg'),
    CARAPACE_CONFIG_DIR: path.join(root, 'my config'),
    CARAPACE_DATA_DIR: path.join(root, 'data'),
  };
});

async function cli(...argv: string[]) {
  let out = '';
  let err = '';
  const stdout = new PassThrough().on('data', (c: Buffer) => (out += c.toString()));
  const stderr = new PassThrough().on('data', (c: Buffer) => (err += c.toString()));
  const stdin = new PassThrough();
  stdin.end();
  const code = await main(argv, { stdout, stderr, stdin, env, cwd: root });
  return { code, stdout: out, stderr: err };
}

const systemdAnalyze = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((p) => fs.existsSync(p));

describe('carapace service', () => {
  it('installs a user unit that runs start --no-console with this config and data, restarts on failure, logs to the journal', async () => {
    const r = await cli('service', 'install', '--user');
    expect(r.code).toBe(0);
    const file = path.join(root, 'xdg', 'systemd', 'user', 'carapace.service');
    expect(r.stdout).toContain(`wrote ${file}`);
    const unit = fs.readFileSync(file, 'utf8');
    expect(unit).toMatch(/^ExecStart=\S+ \S+\/bin\/carapace\.js start --no-console$/m);
    expect(unit).toContain(`Environment="CARAPACE_CONFIG_DIR=${path.join(root, 'my config')}"`);
    expect(unit).toContain(`Environment=CARAPACE_DATA_DIR=${path.join(root, 'data')}`);
    expect(unit).toMatch(/^Restart=on-failure$/m);
    expect(unit).toMatch(/^StandardError=journal$/m);
    expect(unit).toMatch(/^KillSignal=SIGTERM$/m);
    expect(unit).toMatch(/^WantedBy=default\.target$/m);
    expect(unit).toMatch(/^After=.*docker\.service/m);
  });

  it(`passes systemd-analyze verify${systemdAnalyze ? '' : ' (not run: systemd-analyze is not installed here)'}`, async () => {
    await cli('service', 'install', '--user');
    if (!systemdAnalyze) return;
    const file = path.join(root, 'xdg', 'systemd', 'user', 'carapace.service');
    // verify exits non-zero and prints the problem for a unit it finds wrong.
    const output = execFileSync(systemdAnalyze, ['verify', file], { encoding: 'utf8', stdio: 'pipe' });
    expect(output).not.toMatch(/carapace\.service:/);
  });

  it('uninstalls what it installed, and says so when there is nothing to remove', async () => {
    await cli('service', 'install', '--user');
    const r = await cli('service', 'uninstall', '--user');
    expect(r.code).toBe(0);
    expect(fs.existsSync(path.join(root, 'xdg', 'systemd', 'user', 'carapace.service'))).toBe(false);
    const again = await cli('service', 'uninstall', '--user');
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/no user service is installed/);
    expect((await cli('service', 'start')).code).toBe(2);
  });
});

describe('carapace logs', () => {
  it('prints the last lines of data/logs/carapace.log, and says when there is none yet', async () => {
    const none = await cli('logs');
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no log yet: .*carapace\.log does not exist/);
    fs.mkdirSync(path.join(root, 'data', 'logs'), { recursive: true });
    fs.writeFileSync(path.join(root, 'data', 'logs', 'carapace.log'), 'one\ntwo\nthree\n');
    const r = await cli('logs', '-n', '2');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('two\nthree\n');
    expect(r.stderr).toBe(`(${path.join(root, 'data', 'logs', 'carapace.log')})\n`);
  });

  it('shows log lines for a person by default (local time, level, message, details) and as written with --json', async () => {
    const raw = JSON.stringify({
      level: 40,
      time: Date.UTC(2026, 10, 28, 13, 38, 19, 286),
      pid: 1,
      hostname: 'vm',
      channel: 'telegram',
      msg: 'channel lost',
    });
    fs.mkdirSync(path.join(root, 'data', 'logs'), { recursive: true });
    fs.writeFileSync(path.join(root, 'data', 'logs', 'carapace.log'), `${raw}\nnot json\n`);
    const pretty = await cli('logs');
    expect(pretty.code).toBe(0);
    // The machine's own zone (the formatter's test pins zones).
    expect(pretty.stdout).toMatch(
      /^2026-11-2[89] \d\d:\d\d:19\.286 WARN {2}channel lost channel=telegram\nnot json\n$/,
    );
    const json = await cli('logs', '--json');
    expect(json.stdout).toBe(`${raw}\nnot json\n`);
  });

  it('reads the file, and says so, when the service is installed but not running', async () => {
    const unit = path.join(root, 'xdg', 'systemd', 'user', 'carapace.service');
    fs.mkdirSync(path.dirname(unit), { recursive: true });
    fs.writeFileSync(unit, '[Service]\nExecStart=/bin/true\n');
    fs.mkdirSync(path.join(root, 'data', 'logs'), { recursive: true });
    fs.writeFileSync(path.join(root, 'data', 'logs', 'carapace.log'), 'started by hand\n');
    const r = await cli('logs');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('started by hand\n');
    expect(r.stderr).toContain(path.join(root, 'data', 'logs', 'carapace.log'));
    expect(r.stderr).toContain('service is installed but not running');
  });
});
