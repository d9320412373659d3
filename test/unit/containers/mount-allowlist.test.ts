import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_BLOCKED_PATTERNS } from '../../../host/containers/mounts/mount-patterns.ts';
import type {
  MountAllowlist,
  MountAllowlistResult,
} from '../../../host/containers/mounts/mount-allowlist.ts';
import { loadMountAllowlist } from '../../../host/containers/mounts/mount-allowlist.ts';

let tmp: string;
let configDir: string;
let home: string;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-')));
  configDir = path.join(tmp, 'config');
  home = path.join(tmp, 'home');
  fs.mkdirSync(configDir);
  fs.mkdirSync(home);
});

afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

function writeAllowlist(text: string): string {
  const file = path.join(configDir, 'mount-allowlist.toml');
  fs.writeFileSync(file, text, { mode: 0o600 });
  return file;
}

function expectOk(result: MountAllowlistResult): MountAllowlist {
  if (!result.ok) throw new Error(`expected a valid allowlist, got: ${result.reason}`);
  return result.allowlist;
}

function expectFailure(result: MountAllowlistResult): string {
  if (result.ok) throw new Error('expected the allowlist to be rejected');
  return result.reason;
}

describe('loadMountAllowlist', () => {
  it('loads roots through symlinks, expands ~, merges patterns and applies defaults', () => {
    fs.mkdirSync(path.join(home, 'projects'));
    fs.mkdirSync(path.join(tmp, 'real-docs'));
    fs.symlinkSync(path.join(tmp, 'real-docs'), path.join(tmp, 'docs-link'));
    writeAllowlist(`
blocked_patterns = ["*.pem"]

[[allowed_roots]]
path = "~/projects"
allow_read_write = true
description = "code"

[[allowed_roots]]
path = ${JSON.stringify(path.join(tmp, 'docs-link'))}
`);
    const allowlist = expectOk(loadMountAllowlist(configDir, { homeDir: home }));
    expect(allowlist.roots).toEqual([
      {
        configuredPath: '~/projects',
        path: path.join(home, 'projects'),
        allowReadWrite: true,
        description: 'code',
      },
      {
        configuredPath: path.join(tmp, 'docs-link'),
        path: path.join(tmp, 'real-docs'),
        allowReadWrite: false,
      },
    ]);
    expect(allowlist.unusableRoots).toEqual([]);
    expect(allowlist.nonAdminReadOnly).toBe(true);
    expect(allowlist.blockedPatterns).toEqual([...DEFAULT_BLOCKED_PATTERNS, '*.pem']);
  });

  it('accepts an empty file as an allowlist that allows nothing', () => {
    writeAllowlist('');
    const allowlist = expectOk(loadMountAllowlist(configDir, { homeDir: home }));
    expect(allowlist.roots).toEqual([]);
    expect(allowlist.blockedPatterns).toEqual([...DEFAULT_BLOCKED_PATTERNS]);
  });

  it('reports unusable roots without disabling the usable ones', () => {
    fs.mkdirSync(path.join(home, 'ok'));
    fs.mkdirSync(path.join(home, '.ssh', 'keys'), { recursive: true });
    fs.writeFileSync(path.join(home, 'file.txt'), 'x');
    writeAllowlist(`
allowed_roots = [
  { path = "~/missing" },
  { path = "/" },
  { path = "~/.ssh/keys" },
  { path = "~/file.txt" },
  { path = "~/ok" },
]`);
    const allowlist = expectOk(loadMountAllowlist(configDir, { homeDir: home }));
    expect(allowlist.roots.map((r) => r.path)).toEqual([path.join(home, 'ok')]);
    const reasons = Object.fromEntries(allowlist.unusableRoots.map((r) => [r.configuredPath, r.reason]));
    expect(reasons['~/missing']).toMatch(/does not exist/);
    expect(reasons['/']).toMatch(/whole file system/);
    expect(reasons['~/.ssh/keys']).toMatch(/blocked pattern "\.ssh"/);
    expect(reasons['~/file.txt']).toMatch(/not a directory/);
  });

  it('fails with the file name and an example when the file is missing', () => {
    const reason = expectFailure(loadMountAllowlist(configDir, { homeDir: home }));
    expect(reason).toContain(path.join(configDir, 'mount-allowlist.toml'));
    expect(reason).toMatch(/does not exist/);
    expect(reason).toMatch(/allowed_roots/);
  });

  it('names the key, the problem and a right value for a wrong type', () => {
    writeAllowlist('non_admin_read_only = "yes"\n');
    const reason = expectFailure(loadMountAllowlist(configDir, { homeDir: home }));
    expect(reason).toContain('mount-allowlist.toml');
    expect(reason).toContain('non_admin_read_only');
    expect(reason).toMatch(/expected boolean/);
    expect(reason).toContain('e.g. non_admin_read_only = true');
  });

  it('names a wrongly typed key inside a root', () => {
    writeAllowlist('[[allowed_roots]]\npath = "~/x"\nallow_read_write = "yes"\n');
    const reason = expectFailure(loadMountAllowlist(configDir, { homeDir: home }));
    expect(reason).toContain('allowed_roots[0].allow_read_write');
    expect(reason).toContain('e.g. allow_read_write = true');
  });

  it('rejects unknown keys at the top level and inside a root', () => {
    writeAllowlist('allowed_root = []\n');
    const top = expectFailure(loadMountAllowlist(configDir, { homeDir: home }));
    expect(top).toContain('unknown key "allowed_root"');
    expect(top).toContain('allowed_roots, blocked_patterns, non_admin_read_only');

    writeAllowlist('[[allowed_roots]]\npath = "~/x"\nread_write = true\n');
    const inRoot = expectFailure(loadMountAllowlist(configDir, { homeDir: home }));
    expect(inRoot).toContain('unknown key "read_write" in allowed_roots[0]');
    expect(inRoot).toContain('allow_read_write');

    writeAllowlist('[[allowed_roots]]\npath = "~/x"\nnon_admin_read_only = false\n');
    expect(expectFailure(loadMountAllowlist(configDir, { homeDir: home }))).toContain(
      'top-level keys must come before the first [[allowed_roots]]',
    );
  });

  it('rejects relative roots and patterns with a slash', () => {
    writeAllowlist('[[allowed_roots]]\npath = "projects"\n');
    expect(expectFailure(loadMountAllowlist(configDir, { homeDir: home }))).toMatch(
      /allowed_roots\[0\]\.path: must be an absolute path/,
    );
    writeAllowlist('blocked_patterns = ["a/b"]\n');
    expect(expectFailure(loadMountAllowlist(configDir, { homeDir: home }))).toMatch(/blocked_patterns\[0\]/);
  });

  it('reports invalid TOML with its position', () => {
    writeAllowlist('allowed_roots = [\n');
    expect(expectFailure(loadMountAllowlist(configDir, { homeDir: home }))).toMatch(
      /not valid TOML at line \d+/,
    );
  });

  it('refuses a world-writable file', () => {
    const file = writeAllowlist('');
    fs.chmodSync(file, 0o666);
    expect(expectFailure(loadMountAllowlist(configDir, { homeDir: home }))).toMatch(/world-writable/);
  });

  it('loads the shipped example', () => {
    const example = fileURLToPath(new URL('../../../config/mount-allowlist.example.toml', import.meta.url));
    fs.copyFileSync(example, path.join(configDir, 'mount-allowlist.toml'));
    fs.mkdirSync(path.join(home, 'projects'));
    const allowlist = expectOk(loadMountAllowlist(configDir, { homeDir: home }));
    expect(allowlist.roots.map((r) => r.path)).toEqual([path.join(home, 'projects')]);
    expect(allowlist.unusableRoots.map((r) => r.configuredPath)).toEqual(['~/Documents/shared']);
    expect(allowlist.blockedPatterns).toContain('*.pem');
  });
});
