import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { describeMountCheck } from '../../../host/containers/mounts/group-mount-report.ts';
import type { GroupMountPlan, PlanGroupMountsInput } from '../../../host/containers/mounts/group-mounts.ts';
import { assertValidGroupId, planGroupMounts } from '../../../host/containers/mounts/group-mounts.ts';
import type { MountAllowlistResult } from '../../../host/containers/mounts/mount-allowlist.ts';
import { loadMountAllowlist } from '../../../host/containers/mounts/mount-allowlist.ts';
import { isWithin } from '../../../host/containers/mounts/mount-paths.ts';
import { createShadowWalkCache } from '../../../host/containers/mounts/shadow-walk-cache.ts';

let tmp: string;
let home: string;
let configDir: string;
let projectRoot: string;
let dataDir: string;
let root: string;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-')));
  home = path.join(tmp, 'home');
  configDir = path.join(tmp, 'config');
  projectRoot = path.join(tmp, 'project');
  dataDir = path.join(projectRoot, 'data');
  root = path.join(home, 'shared');
  for (const dir of [
    configDir,
    projectRoot,
    path.join(root, 'app', '.git'),
    path.join(root, 'docs'),
    path.join(root, 'notes'),
  ]) {
    fs.mkdirSync(dir, { recursive: true });
  }
  fs.writeFileSync(path.join(root, 'app', '.env'), 'API_KEY=secret');
  fs.writeFileSync(path.join(root, 'app', 'index.ts'), 'export {};');
  fs.writeFileSync(path.join(projectRoot, '.env'), 'TOKEN=secret');
  fs.writeFileSync(path.join(projectRoot, 'package.json'), '{}');
  fs.writeFileSync(
    path.join(configDir, 'mount-allowlist.toml'),
    `allowed_roots = [{ path = "~/shared", allow_read_write = true }]\n`,
  );
});

afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

function allowlist(): MountAllowlistResult {
  return loadMountAllowlist(configDir, { homeDir: home });
}

function plan(
  group: PlanGroupMountsInput['group'],
  overrides: Partial<PlanGroupMountsInput> = {},
): GroupMountPlan {
  return planGroupMounts({
    dataDir,
    projectRoot,
    configDir,
    group,
    allowlistResult: allowlist(),
    homeDir: home,
    assistantName: 'Shell',
    ...overrides,
  });
}

describe('planGroupMounts', () => {
  it('names the mounts whose folders another group mounts read-write, whichever of them lies inside the other', () => {
    const extraMounts = [
      { host_path: '~/shared/docs', container_path: 'docs' },
      { host_path: '~/shared/notes', container_path: 'notes' },
    ];
    const p = plan(
      { id: 'main', isAdmin: true, extraMounts },
      // Another group writes inside docs; a folder that does not exist changes nothing.
      { foldersOthersWrite: ['~/shared/docs/drafts-of-team', path.join(tmp, 'missing')] },
    );
    expect(p.sharedMounts).toEqual([]);
    fs.mkdirSync(path.join(root, 'docs', 'drafts-of-team'));
    const shared = plan(
      { id: 'main', isAdmin: true, extraMounts },
      { foldersOthersWrite: ['~/shared/docs/drafts-of-team'] },
    );
    expect(shared.sharedMounts).toEqual(['/workspace/extra/docs']);
    // A group that writes the whole shared root reaches the project too when the project lies inside it.
    expect(plan({ id: 'main', isAdmin: true }, { foldersOthersWrite: [tmp] }).sharedMounts).toEqual([
      '/workspace/project',
    ]);
  });

  it('gives a plain group its own folder and session, read-write, and nothing else', () => {
    const p = plan({ id: 'family', isAdmin: false });
    expect(p.mounts).toEqual([
      {
        hostPath: path.join(dataDir, 'groups', 'family'),
        containerPath: '/workspace/group',
        readOnly: false,
        kind: 'group',
      },
      {
        hostPath: path.join(dataDir, 'sessions', 'family'),
        containerPath: '/workspace/session',
        readOnly: false,
        kind: 'session',
      },
    ]);
    expect(p.rejected).toEqual([]);
    expect(fs.statSync(path.join(dataDir, 'sessions', 'family')).isDirectory()).toBe(true);
  });

  it('creates AGENT.md once from the template and never overwrites it', () => {
    plan({ id: 'family', isAdmin: false });
    const file = path.join(dataDir, 'groups', 'family', 'AGENT.md');
    const first = fs.readFileSync(file, 'utf8');
    expect(first).toContain('You are Shell');
    expect(first).toMatch(/long-term memory/);
    expect(first).toContain('"family"');

    fs.writeFileSync(file, '# my own notes\n');
    plan({ id: 'family', isAdmin: false });
    expect(fs.readFileSync(file, 'utf8')).toBe('# my own notes\n');
  });

  it('does not follow a symlink planted as AGENT.md', () => {
    const groupDir = path.join(dataDir, 'groups', 'g1');
    fs.mkdirSync(groupDir, { recursive: true });
    const target = path.join(tmp, 'victim.txt');
    fs.symlinkSync(target, path.join(groupDir, 'AGENT.md'));
    plan({ id: 'g1', isAdmin: false });
    expect(fs.existsSync(target)).toBe(false);
  });

  it('refuses a group or session folder that is a symlink', () => {
    fs.mkdirSync(path.join(dataDir, 'groups'), { recursive: true });
    fs.mkdirSync(path.join(tmp, 'elsewhere'));
    fs.symlinkSync(path.join(tmp, 'elsewhere'), path.join(dataDir, 'groups', 'evil'));
    expect(() => plan({ id: 'evil', isAdmin: false })).toThrow(/must be a real directory/);
  });

  it('rejects group ids that could traverse paths, before touching the file system', () => {
    for (const id of ['../x', '..', 'a/b', 'Family', '', '-x', '_x', 'x'.repeat(65), 'a\nb']) {
      expect(() => plan({ id, isAdmin: false }), id).toThrow(/invalid group id/);
    }
    expect(fs.existsSync(dataDir)).toBe(false);
    expect(fs.existsSync(path.join(projectRoot, 'x'))).toBe(false);
    expect(() => assertValidGroupId('x'.repeat(64))).not.toThrow();
    expect(() => assertValidGroupId(7)).toThrow(/invalid group id/);
  });

  it('mounts the project read-only for admin, hiding the data dir, the config dir and top-level secrets', () => {
    const nestedConfig = path.join(projectRoot, 'etc');
    fs.mkdirSync(nestedConfig);
    const p = plan({ id: 'main', isAdmin: true }, { configDir: nestedConfig, allowlistResult: allowlist() });
    expect(p.mounts.find((m) => m.kind === 'project')).toEqual({
      hostPath: projectRoot,
      containerPath: '/workspace/project',
      readOnly: true,
      kind: 'project',
    });
    const shadows = p.mounts.filter((m) => m.kind === 'shadow');
    expect(shadows.map((m) => m.containerPath).sort()).toEqual([
      '/workspace/project/.env',
      '/workspace/project/data',
      '/workspace/project/etc',
    ]);
    for (const s of shadows) {
      expect(s.readOnly).toBe(true);
      const stat = fs.lstatSync(s.hostPath);
      if (stat.isDirectory()) expect(fs.readdirSync(s.hostPath)).toEqual([]);
      else expect(stat.size).toBe(0);
    }
    expect(fs.lstatSync(shadows.find((s) => s.containerPath.endsWith('/data'))!.hostPath).isDirectory()).toBe(
      true,
    );
    expect(fs.lstatSync(shadows.find((s) => s.containerPath.endsWith('/.env'))!.hostPath).isFile()).toBe(
      true,
    );
    // Shadows follow the mount they sit in, so Docker binds the parent first.
    const projectIndex = p.mounts.findIndex((m) => m.kind === 'project');
    expect(p.mounts.findIndex((m) => m.kind === 'shadow')).toBeGreaterThan(projectIndex);
  });

  it('hides blocked names and git configuration at any depth of the project, without following symlinks', () => {
    const deep = path.join(projectRoot, 'apps', 'web', 'config');
    fs.mkdirSync(deep, { recursive: true });
    fs.writeFileSync(path.join(deep, '.env.local'), 'TOKEN=nested');
    fs.writeFileSync(path.join(deep, 'settings.json'), '{}');
    fs.mkdirSync(path.join(projectRoot, '.git', 'modules', 'vendor', 'objects', 'ab'), { recursive: true });
    fs.writeFileSync(
      path.join(projectRoot, '.git', 'config'),
      '[remote "o"]\n url = https://u:tok@example.com/r',
    );
    fs.writeFileSync(path.join(projectRoot, '.git', 'HEAD'), 'ref: refs/heads/main');
    fs.writeFileSync(
      path.join(projectRoot, '.git', 'modules', 'vendor', 'config'),
      '[credential]\n helper = store',
    );
    fs.writeFileSync(path.join(projectRoot, '.git', 'modules', 'vendor', 'objects', 'ab', 'config'), 'blob');
    fs.writeFileSync(path.join(projectRoot, 'apps', '.gitconfig'), '[credential]');
    // A symlink to a secret elsewhere in the tree is covered under the target's own name.
    fs.symlinkSync(path.join(deep, '.env.local'), path.join(projectRoot, 'apps', 'link'));
    const p = plan({ id: 'main', isAdmin: true }, { allowlistResult: allowlist() });
    expect(
      p.mounts
        .filter((m) => m.kind === 'shadow')
        .map((m) => m.containerPath)
        .sort(),
    ).toEqual([
      '/workspace/project/.env',
      '/workspace/project/.git/config',
      '/workspace/project/.git/modules/vendor/config',
      '/workspace/project/apps/.gitconfig',
      '/workspace/project/apps/web/config/.env.local',
      '/workspace/project/data',
    ]);
    expect(p.secretMounts).toEqual(['/workspace/project']);
  });

  it('plans the same mounts with a walk cache, run after run, and sees a secret added between runs', () => {
    const extraMounts = [{ host_path: '~/shared/app' }, { host_path: '~/shared/docs' }];
    fs.mkdirSync(path.join(root, 'docs', 'guides'));
    const walkCache = createShadowWalkCache({ now: () => Date.now() + 60_000 });
    const uncached = plan({ id: 'main', isAdmin: true, extraMounts });
    expect(plan({ id: 'main', isAdmin: true, extraMounts }, { walkCache })).toEqual(uncached);
    expect(plan({ id: 'main', isAdmin: true, extraMounts }, { walkCache })).toEqual(uncached);
    fs.writeFileSync(path.join(root, 'docs', 'guides', 'credentials.json'), '{}');
    const later = plan({ id: 'main', isAdmin: true, extraMounts }, { walkCache });
    expect(later).toEqual(plan({ id: 'main', isAdmin: true, extraMounts }));
    expect(later.rejected).toEqual([]);
    expect(later.mounts.map((m) => m.containerPath)).toContain(
      '/workspace/extra/docs/guides/credentials.json',
    );
  });

  it('says when a mounted tree held nothing that matched a secret pattern', () => {
    fs.rmSync(path.join(projectRoot, '.env'));
    expect(plan({ id: 'main', isAdmin: true }, { allowlistResult: allowlist() }).secretMounts).toEqual([]);
  });

  it("hides dependencies' test keys and source files about credentials, but they do not make the tree secret", () => {
    fs.rmSync(path.join(projectRoot, '.env'));
    const fixtures = path.join(projectRoot, 'node_modules', 'ssh2', 'test', 'fixtures');
    fs.mkdirSync(fixtures, { recursive: true });
    fs.writeFileSync(path.join(fixtures, 'id_rsa'), '-----BEGIN RSA PRIVATE KEY-----');
    fs.mkdirSync(path.join(projectRoot, 'src'), { recursive: true });
    fs.writeFileSync(path.join(projectRoot, 'src', 'url-credentials.ts'), 'export {}');
    fs.mkdirSync(path.join(projectRoot, '.git'), { recursive: true });
    fs.writeFileSync(path.join(projectRoot, '.git', 'config'), '[core]');
    const p = plan({ id: 'main', isAdmin: true }, { allowlistResult: allowlist() });
    const shadows = p.mounts.filter((m) => m.kind === 'shadow').map((m) => m.containerPath);
    expect(shadows).toEqual(
      expect.arrayContaining([
        '/workspace/project/node_modules/ssh2/test/fixtures/id_rsa',
        '/workspace/project/src/url-credentials.ts',
        '/workspace/project/.git/config',
      ]),
    );
    expect(p.secretMounts).toEqual([]);
    // The owner's own key file, outside dependencies, does count.
    fs.writeFileSync(path.join(projectRoot, 'src', 'id_rsa'), 'key');
    expect(plan({ id: 'main', isAdmin: true }, { allowlistResult: allowlist() }).secretMounts).toEqual([
      '/workspace/project',
    ]);
  });

  it('gives a non-admin group no project mount', () => {
    expect(
      plan({ id: 'family', isAdmin: false }).mounts.some((m) =>
        m.containerPath.startsWith('/workspace/project'),
      ),
    ).toBe(false);
  });

  it('refuses a project root inside the data dir', () => {
    expect(() => plan({ id: 'main', isAdmin: true }, { dataDir: tmp })).toThrow(/never mounted/);
  });

  it('refuses to use a shadow directory that is no longer empty', () => {
    plan({ id: 'main', isAdmin: true });
    fs.writeFileSync(path.join(dataDir, 'mount-shadow', 'empty-dir', 'planted'), 'x');
    expect(() => plan({ id: 'main', isAdmin: true })).toThrow(/must be an empty directory/);
  });

  it('adds validated extras under /workspace/extra and hides their top-level secrets', () => {
    const p = plan({
      id: 'family',
      isAdmin: false,
      extraMounts: [
        { host_path: '~/shared/app', read_write: true },
        { host_path: '~/shared/docs', container_path: 'ref' },
      ],
    });
    expect(p.rejected).toEqual([]);
    const extras = p.mounts.filter((m) => m.kind === 'extra');
    expect(extras.map((m) => [m.containerPath, m.hostPath, m.readOnly])).toEqual([
      ['/workspace/extra/app', path.join(root, 'app'), true],
      ['/workspace/extra/ref', path.join(root, 'docs'), true],
    ]);
    expect(extras[0]?.note).toMatch(/non_admin_read_only/);
    expect(p.mounts.filter((m) => m.kind === 'shadow').map((m) => m.containerPath)).toEqual([
      '/workspace/extra/app/.env',
    ]);
  });

  it('refuses to mount a directory whose secret entry cannot be hidden because of its name', () => {
    fs.writeFileSync(path.join(root, 'docs', '.env,old'), 'API_KEY=secret');
    const p = plan({ id: 'family', isAdmin: false, extraMounts: [{ host_path: '~/shared/docs' }] });
    expect(p.mounts.filter((m) => m.kind === 'extra')).toEqual([]);
    expect(p.rejected[0]?.reason).toMatch(/"\.env,old".*rename it/);

    fs.writeFileSync(path.join(projectRoot, 'credentials:bak'), 'x');
    expect(() => plan({ id: 'main', isAdmin: true })).toThrow(/cannot mount the project root.*rename it/);
  });

  it('rejects a second mount on the same or a nested container path', () => {
    const p = plan({
      id: 'family',
      isAdmin: false,
      extraMounts: [
        { host_path: '~/shared/docs', container_path: 'docs' },
        { host_path: '~/shared/notes', container_path: 'docs' },
        { host_path: '~/shared/notes', container_path: 'docs/inner' },
        { host_path: '~/shared/notes' },
      ],
    });
    expect(p.mounts.filter((m) => m.kind === 'extra').map((m) => m.containerPath)).toEqual([
      '/workspace/extra/docs',
      '/workspace/extra/notes',
    ]);
    expect(p.rejected.map((r) => r.reason)).toEqual([
      expect.stringMatching(/already used by the mount of .*docs/),
      expect.stringMatching(/overlaps \/workspace\/extra\/docs/),
    ]);
    const containerPaths = p.mounts.map((m) => m.containerPath);
    expect(new Set(containerPaths).size).toBe(containerPaths.length);
  });

  it('never mounts the data dir, the config dir or another group, even under an allowed root', () => {
    fs.writeFileSync(
      path.join(configDir, 'mount-allowlist.toml'),
      `allowed_roots = [{ path = ${JSON.stringify(tmp)}, allow_read_write = true }]\nnon_admin_read_only = false\n`,
    );
    plan({ id: 'other', isAdmin: false });
    const p = plan({
      id: 'family',
      isAdmin: false,
      extraMounts: [
        { host_path: projectRoot, container_path: 'project' },
        { host_path: path.join(dataDir, 'groups', 'other'), container_path: 'other' },
        { host_path: path.join(dataDir), container_path: 'data' },
        { host_path: configDir, container_path: 'config' },
        { host_path: tmp, container_path: 'all' },
      ],
    });
    expect(p.mounts.filter((m) => m.kind === 'extra')).toEqual([]);
    expect(p.rejected).toHaveLength(5);
    for (const r of p.rejected) expect(r.reason).toMatch(/never mounted/);
    for (const m of p.mounts) {
      if (m.kind === 'group' || m.kind === 'session') continue;
      expect(isWithin(m.hostPath, dataDir) || isWithin(dataDir, m.hostPath)).toBe(false);
    }
  });

  it('rejects every extra with the reason when the allowlist is missing, and notes it', () => {
    fs.rmSync(path.join(configDir, 'mount-allowlist.toml'));
    const p = plan({ id: 'main', isAdmin: true, extraMounts: [{ host_path: '~/shared/docs' }] });
    expect(p.mounts.filter((m) => m.kind === 'extra')).toEqual([]);
    expect(p.rejected).toEqual([
      { request: { host_path: '~/shared/docs' }, reason: expect.stringMatching(/does not exist/) },
    ]);
    expect(p.notes.join()).toMatch(/every extra mount is blocked/);
    // Built-in mounts do not depend on the allowlist.
    expect(p.mounts.map((m) => m.kind)).toContain('project');
  });
});

describe('describeMountCheck', () => {
  it('lists mounts, hidden entries, rejections and notes', () => {
    fs.writeFileSync(
      path.join(configDir, 'mount-allowlist.toml'),
      `allowed_roots = [{ path = "~/shared" }, { path = "~/unplugged" }]\n`,
    );
    const text = describeMountCheck(
      plan({
        id: 'family',
        isAdmin: false,
        extraMounts: [{ host_path: '~/shared/app', container_path: 'app' }, { host_path: '~/.ssh' }],
      }),
    );
    const lines = text.split('\n');
    expect(lines[0]).toBe('Mounts for group "family" (not admin): 4 mounted, 1 rejected');
    expect(text).toMatch(/rw {2}\/workspace\/group\s+<- .*groups\/family/);
    expect(text).toMatch(/ro {2}\/workspace\/extra\/app\s+<- .*shared\/app/);
    expect(text).toMatch(/\/workspace\/extra\/app\/\.env\s+hidden \(matches blocked pattern "\.env"\)/);
    expect(text).toMatch(/Rejected:\n {2}- ~\/\.ssh: .*blocked pattern "\.ssh"/);
    expect(text).toMatch(/Notes:\n {2}- allowed root ~\/unplugged is unusable: does not exist/);
  });
});
