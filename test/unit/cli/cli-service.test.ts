import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../../host/cli/main.ts';
import { renderUnit, type UnitInputs } from '../../../host/cli/service-unit.ts';
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

/**
 * What systemd-analyze verify says about the unit file: it prints a line per problem (an unknown key, a
 * value it cannot parse, an unsafe user) on stderr, and still exits 0 for most of them.
 */
function verify(file: string): string {
  const r = spawnSync(systemdAnalyze as string, ['verify', file], { encoding: 'utf8' });
  return `${r.stdout}${r.stderr}`
    .split('\n')
    .filter((line) => line.includes(path.basename(file)) || r.status !== 0)
    .join('\n')
    .trim();
}

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
    // A user manager cannot build mount namespaces without hiding the docker group: what needs none.
    expect(unit).toMatch(/^NoNewPrivileges=yes$/m);
    expect(unit).toMatch(/^RestrictSUIDSGID=yes$/m);
    expect(unit).not.toMatch(/^ProtectSystem=/m);
  });

  it(`passes systemd-analyze verify${systemdAnalyze ? '' : ' (not run: systemd-analyze is not installed here)'}`, async () => {
    await cli('service', 'install', '--user');
    if (!systemdAnalyze) return;
    const file = path.join(root, 'xdg', 'systemd', 'user', 'carapace.service');
    expect(verify(file)).toBe('');
  });

  const systemUnit = (extra: Partial<UnitInputs> = {}) =>
    renderUnit({
      scope: 'system',
      nodePath: process.execPath,
      cliPath: path.join(root, 'bin', 'carapace.js'),
      projectRoot: root,
      configDir: path.join(root, 'my config'),
      dataDir: path.join(root, 'data'),
      ...extra,
    });
  const lines = (unit: string, key: string) =>
    unit
      .split('\n')
      .filter((l) => l.startsWith(`${key}=`))
      .map((l) => l.slice(key.length + 1));

  it('boxes a root system service in: read-only system and home but for the folders the host writes, private /tmp', () => {
    const unit = systemUnit();
    for (const setting of [
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'PrivateTmp=yes',
      'ProtectHome=read-only',
      'ProtectKernelTunables=yes',
      'ProtectControlGroups=yes',
      'LockPersonality=yes',
    ])
      expect(unit.split('\n')).toContain(setting);
    expect(lines(unit, 'ReadWritePaths')).toEqual([
      `${path.join(root, 'data')} "${path.join(root, 'my config')}" ${path.join(root, 'container-agent', 'dist')}`,
      '-/run/xtables.lock',
    ]);
    // Root keeps what gateway-mode groups and the offline image need: no dedicated user, setuid unpacking.
    expect(lines(unit, 'User')).toEqual([]);
    expect(lines(unit, 'RestrictSUIDSGID')).toEqual([]);
  });

  it('runs a system service as a dedicated user in the docker group with --run-as', () => {
    const unit = systemUnit({ runAs: 'carapace' });
    expect(lines(unit, 'User')).toEqual(['carapace']);
    expect(lines(unit, 'SupplementaryGroups')).toEqual(['docker']);
    expect(lines(unit, 'RestrictSUIDSGID')).toEqual(['yes']);
    expect(lines(unit, 'ProtectSystem')).toEqual(['strict']);
    expect(lines(unit, 'ExecStartPre')).toEqual([]);
  });

  it(`passes systemd-analyze verify as a system unit${systemdAnalyze ? '' : ' (not run: systemd-analyze is not installed here)'}`, () => {
    if (!systemdAnalyze) return;
    for (const extra of [{}, { runAs: 'root' }]) {
      const dir = tempDir();
      const file = path.join(dir, 'carapace.service');
      fs.writeFileSync(file, systemUnit(extra));
      expect(verify(file)).toBe('');
    }
  });

  it('refuses --run-as for a user that does not exist, or with --user', async () => {
    const missing = await cli('service', 'install', '--system', '--run-as', 'no-such-user-42');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(
      /there is no user "no-such-user-42": create one with: useradd .*--groups docker/,
    );
    const both = await cli('service', 'install', '--user', '--run-as', 'carapace');
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--run-as is for the system service/);
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
