import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MountAllowlistResult } from '../../../host/containers/mounts/mount-allowlist.ts';
import { loadMountAllowlist } from '../../../host/containers/mounts/mount-allowlist.ts';
import type {
  ExtraMountValidation,
  ValidatedMount,
} from '../../../host/containers/mounts/mount-validation.ts';
import {
  validateContainerPath,
  validateExtraMount,
} from '../../../host/containers/mounts/mount-validation.ts';

let tmp: string;
let home: string;
let configDir: string;
let roots: string;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-')));
  home = path.join(tmp, 'home');
  configDir = path.join(tmp, 'config');
  roots = path.join(tmp, 'roots');
  for (const dir of [
    home,
    configDir,
    path.join(tmp, 'outside'),
    path.join(roots, 'rw', 'app'),
    path.join(roots, 'rw', '.ssh'),
    path.join(roots, 'rw', 'frozen', 'old'),
    path.join(roots, 'rw', 'deep', '.aws', 'profile'),
    path.join(roots, 'rw', 'My Docs'),
    path.join(roots, 'ro', 'manuals'),
    path.join(roots, 'fo'),
    path.join(roots, 'foo'),
  ]) {
    fs.mkdirSync(dir, { recursive: true });
  }
  fs.writeFileSync(path.join(roots, 'rw', '.ssh', 'id_ed25519'), 'key');
  fs.writeFileSync(path.join(roots, 'rw', 'server.pem'), 'cert');
  fs.symlinkSync(path.join(roots, 'rw', '.ssh'), path.join(roots, 'rw', 'link'));
  fs.symlinkSync(path.join(tmp, 'outside'), path.join(roots, 'rw', 'escape'));
  fs.symlinkSync(path.join(roots, 'rw', 'app'), path.join(home, 'app-shortcut'));
});

afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

function allowlist(nonAdminReadOnly = true): MountAllowlistResult {
  fs.writeFileSync(
    path.join(configDir, 'mount-allowlist.toml'),
    `blocked_patterns = ["*.pem"]
non_admin_read_only = ${nonAdminReadOnly}
allowed_roots = [
  { path = ${JSON.stringify(path.join(roots, 'rw'))}, allow_read_write = true },
  { path = ${JSON.stringify(path.join(roots, 'rw', 'frozen'))}, allow_read_write = false },
  { path = ${JSON.stringify(path.join(roots, 'ro'))} },
  { path = ${JSON.stringify(path.join(roots, 'fo'))} },
]
`,
  );
  const result = loadMountAllowlist(configDir, { homeDir: home });
  if (!result.ok) throw new Error(result.reason);
  return result;
}

function validate(
  request: unknown,
  opts: { isAdmin?: boolean; result?: MountAllowlistResult; protectedPaths?: string[] } = {},
) {
  return validateExtraMount(request, {
    allowlistResult: opts.result ?? allowlist(),
    isAdmin: opts.isAdmin ?? false,
    homeDir: home,
    protectedPaths: opts.protectedPaths,
  });
}

function accepted(v: ExtraMountValidation): ValidatedMount & { notes: string[] } {
  if (!v.ok) throw new Error(`expected the mount to be accepted, got: ${v.reason}`);
  return { ...v.mount, notes: v.notes };
}

function rejected(v: ExtraMountValidation): string {
  if (v.ok) throw new Error(`expected a rejection, got ${JSON.stringify(v.mount)}`);
  return v.reason;
}

describe('container paths', () => {
  it('rejects "..", absolute paths, control characters, odd characters and empty parts', () => {
    expect(
      rejected(validate({ host_path: path.join(roots, 'rw', 'app'), container_path: '../group' })),
    ).toMatch(/"\.\."/);
    expect(
      rejected(validate({ host_path: path.join(roots, 'rw', 'app'), container_path: 'a/../../b' })),
    ).toMatch(/"\.\."/);
    expect(
      rejected(validate({ host_path: path.join(roots, 'rw', 'app'), container_path: '/workspace/group' })),
    ).toMatch(/absolute/);
    expect(validateContainerPath('a\nb').ok).toBe(false);
    expect(validateContainerPath('a\0b').ok).toBe(false);
    expect(validateContainerPath('a b').ok).toBe(false);
    expect(validateContainerPath('a:b').ok).toBe(false);
    expect(validateContainerPath('a//b').ok).toBe(false);
    expect(validateContainerPath('a/').ok).toBe(false);
    expect(validateContainerPath('./a').ok).toBe(false);
    expect(validateContainerPath('').ok).toBe(false);
    expect(validateContainerPath('docs/v1.2_x-y')).toEqual({
      ok: true,
      containerPath: '/workspace/extra/docs/v1.2_x-y',
    });
  });

  it('defaults to the basename of the requested path, and says so when that name is unusable', () => {
    expect(accepted(validate({ host_path: path.join(roots, 'rw', 'app') })).containerPath).toBe(
      '/workspace/extra/app',
    );
    expect(accepted(validate({ host_path: '~/app-shortcut' })).containerPath).toBe(
      '/workspace/extra/app-shortcut',
    );
    expect(rejected(validate({ host_path: path.join(roots, 'rw', 'My Docs') }))).toMatch(
      /set container_path/,
    );
    expect(
      accepted(validate({ host_path: path.join(roots, 'rw', 'My Docs'), container_path: 'docs' }))
        .containerPath,
    ).toBe('/workspace/extra/docs');
  });
});

describe('host paths', () => {
  it('accepts a path under a root and returns the resolved path', () => {
    const m = accepted(validate({ host_path: '~/app-shortcut', container_path: 'app' }));
    expect(m).toEqual({
      hostPath: path.join(roots, 'rw', 'app'),
      containerPath: '/workspace/extra/app',
      readOnly: true,
      notes: [],
    });
  });

  it('rejects a symlink into a blocked directory', () => {
    const reason = rejected(validate({ host_path: path.join(roots, 'rw', 'link'), container_path: 'x' }));
    expect(reason).toContain(`resolves to ${path.join(roots, 'rw', '.ssh')}`);
    expect(reason).toMatch(/blocked pattern "\.ssh"/);
  });

  it('rejects a blocked pattern in any component, as written or resolved, including configured globs', () => {
    expect(rejected(validate({ host_path: path.join(roots, 'rw', 'deep', '.aws', 'profile') }))).toMatch(
      /"\.aws"/,
    );
    expect(
      rejected(validate({ host_path: path.join(roots, 'rw', '.ssh', 'id_ed25519'), container_path: 'k' })),
    ).toMatch(/blocked/);
    expect(
      rejected(validate({ host_path: path.join(roots, 'rw', 'server.pem'), container_path: 'c' })),
    ).toMatch(/"\*\.pem"/);
    // Written with a blocked name even though it does not exist: refused before touching the file system.
    expect(rejected(validate({ host_path: path.join(roots, 'rw', '.env'), container_path: 'e' }))).toMatch(
      /"\.env"/,
    );
  });

  it('rejects a path outside every root, also when reached through a symlink inside a root', () => {
    expect(rejected(validate({ host_path: path.join(tmp, 'outside') }))).toMatch(
      /not under any allowed root/,
    );
    const reason = rejected(validate({ host_path: path.join(roots, 'rw', 'escape') }));
    expect(reason).toMatch(/not under any allowed root/);
    expect(reason).toContain(`resolves to ${path.join(tmp, 'outside')}`);
  });

  it('does not treat a sibling with a common prefix as inside the root', () => {
    expect(accepted(validate({ host_path: path.join(roots, 'fo') })).hostPath).toBe(path.join(roots, 'fo'));
    expect(rejected(validate({ host_path: path.join(roots, 'foo') }))).toMatch(/not under any allowed root/);
  });

  it('rejects missing, relative, ~user and ".." paths', () => {
    expect(rejected(validate({ host_path: path.join(roots, 'rw', 'nope') }))).toMatch(/does not exist/);
    expect(rejected(validate({ host_path: 'roots/rw/app' }))).toMatch(/relative/);
    expect(rejected(validate({ host_path: '~root/app' }))).toMatch(/~user/);
    expect(rejected(validate({ host_path: `${path.join(roots, 'rw', 'app')}/../app` }))).toMatch(/"\.\."/);
    expect(rejected(validate({ host_path: '~/../home/app-shortcut' }))).toMatch(/"\.\."/);
  });

  it('never mounts sockets or devices', async () => {
    const socketPath = path.join(roots, 'rw', 'agent.sock');
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      expect(rejected(validate({ host_path: socketPath, container_path: 's' }))).toMatch(
        /neither a directory nor a regular file/,
      );
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('rejects paths that are inside or contain a protected dir', () => {
    const dataDir = path.join(roots, 'rw', 'app', 'data');
    fs.mkdirSync(dataDir);
    expect(rejected(validate({ host_path: dataDir }, { protectedPaths: [dataDir] }))).toMatch(
      /never mounted/,
    );
    expect(
      rejected(validate({ host_path: path.join(roots, 'rw', 'app') }, { protectedPaths: [dataDir] })),
    ).toMatch(/never mounted/);
    expect(
      accepted(validate({ host_path: path.join(roots, 'ro', 'manuals') }, { protectedPaths: [dataDir] }))
        .hostPath,
    ).toBe(path.join(roots, 'ro', 'manuals'));
  });

  it('rejects malformed requests instead of throwing', () => {
    expect(rejected(validate({ host_path: path.join(roots, 'rw', 'app'), rw: true }))).toMatch(
      /invalid mount request/,
    );
    expect(rejected(validate({ host_path: 42 }))).toMatch(/host_path/);
    expect(rejected(validate('~/app'))).toMatch(/invalid mount request/);
  });
});

describe('read-write decision', () => {
  const app = () => path.join(roots, 'rw', 'app');

  it('is read-only unless asked', () => {
    expect(accepted(validate({ host_path: app() }, { isAdmin: true })).readOnly).toBe(true);
  });

  it('gives read-write to the admin group on a read-write root', () => {
    expect(accepted(validate({ host_path: app(), read_write: true }, { isAdmin: true }))).toMatchObject({
      readOnly: false,
      notes: [],
    });
  });

  it('keeps a non-admin group read-only under non_admin_read_only, with a note', () => {
    const m = accepted(validate({ host_path: app(), read_write: true }, { isAdmin: false }));
    expect(m.readOnly).toBe(true);
    expect(m.notes.join()).toMatch(/non_admin_read_only/);
  });

  it('gives read-write to a non-admin group when non_admin_read_only is false', () => {
    const m = accepted(
      validate({ host_path: app(), read_write: true }, { isAdmin: false, result: allowlist(false) }),
    );
    expect(m.readOnly).toBe(false);
  });

  it('keeps read-only on a read-only root, even for admin', () => {
    const m = accepted(
      validate({ host_path: path.join(roots, 'ro', 'manuals'), read_write: true }, { isAdmin: true }),
    );
    expect(m.readOnly).toBe(true);
    expect(m.notes.join()).toMatch(/does not set allow_read_write/);
  });

  it('lets the deepest root decide when roots are nested', () => {
    const m = accepted(
      validate({ host_path: path.join(roots, 'rw', 'frozen', 'old'), read_write: true }, { isAdmin: true }),
    );
    expect(m.readOnly).toBe(true);
  });
});

describe('allowlist failures', () => {
  it('blocks every mount when the allowlist is missing, with the reason', () => {
    const missing = loadMountAllowlist(path.join(tmp, 'no-config'), { homeDir: home });
    const reason = rejected(
      validate({ host_path: path.join(roots, 'rw', 'app') }, { result: missing, isAdmin: true }),
    );
    expect(reason).toMatch(/extra mounts are blocked/);
    expect(reason).toContain(path.join(tmp, 'no-config', 'mount-allowlist.toml'));
  });

  it('blocks every mount when the allowlist is invalid (wrong type or unknown key)', () => {
    fs.writeFileSync(path.join(configDir, 'mount-allowlist.toml'), 'allowed_roots = "everything"\n');
    const wrongType = loadMountAllowlist(configDir, { homeDir: home });
    expect(rejected(validate({ host_path: path.join(roots, 'rw', 'app') }, { result: wrongType }))).toMatch(
      /extra mounts are blocked: .*allowed_roots: .*expected array/,
    );
    fs.writeFileSync(path.join(configDir, 'mount-allowlist.toml'), 'allow_everything = true\n');
    const unknownKey = loadMountAllowlist(configDir, { homeDir: home });
    expect(rejected(validate({ host_path: path.join(roots, 'rw', 'app') }, { result: unknownKey }))).toMatch(
      /unknown key "allow_everything"/,
    );
  });

  it('reports an allowlist without usable roots', () => {
    fs.writeFileSync(path.join(configDir, 'mount-allowlist.toml'), 'allowed_roots = [{ path = "~/gone" }]\n');
    const result = loadMountAllowlist(configDir, { homeDir: home });
    expect(rejected(validate({ host_path: path.join(roots, 'rw', 'app') }, { result }))).toMatch(
      /no usable allowed_roots/,
    );
  });
});
