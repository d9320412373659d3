import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolvePaths } from '../../../host/config/paths.ts';

const cwd = path.resolve('/srv/project');
const homeDir = path.resolve('/home/owner');

describe('resolvePaths', () => {
  it('uses ~/.config/carapace and ./data when the variables are not set', () => {
    const p = resolvePaths({ env: {}, cwd, homeDir });
    expect(p.configDir).toBe(path.join(homeDir, '.config', 'carapace'));
    expect(p.configFile).toBe(path.join(homeDir, '.config', 'carapace', 'config.toml'));
    expect(p.allowlistFile).toBe(path.join(homeDir, '.config', 'carapace', 'mount-allowlist.toml'));
    expect(p.envFile).toBe(path.join(homeDir, '.config', 'carapace', '.env'));
    expect(p.dataDir).toBe(path.join(cwd, 'data'));
    expect(p.databaseFile).toBe(path.join(cwd, 'data', 'carapace.db'));
    expect(p.groupsDir).toBe(path.join(cwd, 'data', 'groups'));
    expect(p.sessionsDir).toBe(path.join(cwd, 'data', 'sessions'));
    expect(p.logsDir).toBe(path.join(cwd, 'data', 'logs'));
    expect(p.socketFile).toBe(path.join(cwd, 'data', 'carapace.sock'));
  });

  it('treats empty variables as not set', () => {
    expect(resolvePaths({ env: { CARAPACE_CONFIG_DIR: '', CARAPACE_DATA_DIR: '' }, cwd, homeDir })).toEqual(
      resolvePaths({ env: {}, cwd, homeDir }),
    );
  });

  it('takes absolute folders from the variables as they are', () => {
    const p = resolvePaths({
      env: { CARAPACE_CONFIG_DIR: '/etc/carapace', CARAPACE_DATA_DIR: '/var/lib/carapace' },
      cwd,
      homeDir,
    });
    expect(p.configDir).toBe(path.resolve('/etc/carapace'));
    expect(p.configFile).toBe(path.join(path.resolve('/etc/carapace'), 'config.toml'));
    expect(p.dataDir).toBe(path.resolve('/var/lib/carapace'));
    expect(p.databaseFile).toBe(path.join(path.resolve('/var/lib/carapace'), 'carapace.db'));
  });

  it('resolves relative folders against the working directory', () => {
    const p = resolvePaths({
      env: { CARAPACE_CONFIG_DIR: 'conf', CARAPACE_DATA_DIR: '../state' },
      cwd,
      homeDir,
    });
    expect(p.configDir).toBe(path.join(cwd, 'conf'));
    expect(p.dataDir).toBe(path.resolve(cwd, '..', 'state'));
  });

  it('expands ~ and ~/ to the home folder', () => {
    const p = resolvePaths({
      env: { CARAPACE_CONFIG_DIR: '~', CARAPACE_DATA_DIR: '~/carapace-data' },
      cwd,
      homeDir,
    });
    expect(p.configDir).toBe(homeDir);
    expect(p.dataDir).toBe(path.join(homeDir, 'carapace-data'));
  });

  it('does not expand ~ in the middle of a path or ~user', () => {
    const p = resolvePaths({
      env: { CARAPACE_CONFIG_DIR: 'a/~/b', CARAPACE_DATA_DIR: '~other/x' },
      cwd,
      homeDir,
    });
    expect(p.configDir).toBe(path.join(cwd, 'a', '~', 'b'));
    expect(p.dataDir).toBe(path.join(cwd, '~other', 'x'));
  });

  it('always returns absolute paths', () => {
    const p = resolvePaths({ env: { CARAPACE_DATA_DIR: 'x' }, cwd, homeDir });
    for (const value of Object.values(p)) expect(path.isAbsolute(value)).toBe(true);
  });
});
