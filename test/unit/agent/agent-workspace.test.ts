import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  PathRefusedError,
  createWorkspace,
  type Workspace,
} from '../../../container-agent/src/workspace/confine.ts';

let tmp: string;
let root: string;
let outside: string;
let workspace: Workspace;

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-'));
  root = path.join(tmp, 'workspace');
  outside = path.join(tmp, 'outside');
  fs.mkdirSync(path.join(root, 'group', 'notes'), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret');
  fs.writeFileSync(path.join(root, 'group', 'notes', 'a.md'), 'a');
  workspace = createWorkspace({ root, cwd: path.join(root, 'group') });
});

afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

const real = (p: string) => fs.realpathSync(p);

describe('workspace confinement', () => {
  it('resolves relative paths from the group folder and absolute paths inside the workspace', async () => {
    expect(await workspace.resolve('notes/a.md')).toBe(real(path.join(root, 'group', 'notes', 'a.md')));
    expect(await workspace.resolve(path.join(root, 'group', 'notes'))).toBe(
      real(path.join(root, 'group', 'notes')),
    );
    expect(await workspace.resolve('./notes/../notes/a.md').catch((e: unknown) => e)).toBeInstanceOf(
      PathRefusedError,
    );
  });

  it('refuses ".." segments even when they would stay inside', async () => {
    await expect(workspace.resolve('../group/notes/a.md')).rejects.toThrow(/"\.\." is not allowed/);
    await expect(workspace.resolve('notes/../../../outside/secret.txt')).rejects.toBeInstanceOf(
      PathRefusedError,
    );
  });

  it('refuses absolute paths outside the workspace', async () => {
    await expect(workspace.resolve(path.join(outside, 'secret.txt'))).rejects.toThrow(
      /outside the workspace/,
    );
    await expect(workspace.resolve('/etc/passwd')).rejects.toBeInstanceOf(PathRefusedError);
  });

  it('refuses a symlink that leads out, for reading and for writing', async () => {
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'group', 'link.txt'));
    fs.symlinkSync(outside, path.join(root, 'group', 'out-dir'));
    await expect(workspace.resolve('link.txt')).rejects.toThrow(/through a symlink/);
    await expect(workspace.resolve('out-dir/secret.txt')).rejects.toThrow(/through a symlink/);
    await expect(workspace.resolve('out-dir/new.txt', { allowMissing: true })).rejects.toThrow(
      /through a symlink/,
    );
    await expect(workspace.resolve('link.txt', { allowMissing: true })).rejects.toThrow(/through a symlink/);
  });

  it('refuses a dangling symlink that would create a file outside', async () => {
    fs.symlinkSync(path.join(outside, 'not-yet.txt'), path.join(root, 'group', 'dangling'));
    await expect(workspace.resolve('dangling', { allowMissing: true })).rejects.toThrow(
      /symlink whose target does not exist/,
    );
    expect(fs.existsSync(path.join(outside, 'not-yet.txt'))).toBe(false);
  });

  it('follows symlinks that stay inside the workspace', async () => {
    fs.symlinkSync(path.join(root, 'group', 'notes'), path.join(root, 'group', 'inner'));
    expect(await workspace.resolve('inner/a.md')).toBe(real(path.join(root, 'group', 'notes', 'a.md')));
  });

  it('allows missing paths only when asked, and reports them relative to the group folder', async () => {
    await expect(workspace.resolve('new/deep/file.txt')).rejects.toThrow(/does not exist/);
    const target = await workspace.resolve('new/deep/file.txt', { allowMissing: true });
    expect(target).toBe(path.join(real(path.join(root, 'group')), 'new', 'deep', 'file.txt'));
    expect(workspace.display(target)).toBe(path.join('new', 'deep', 'file.txt'));
  });

  it('refuses NUL bytes and empty paths', async () => {
    await expect(workspace.resolve('a\0b')).rejects.toThrow(/NUL/);
    await expect(workspace.resolve('  ')).rejects.toThrow(/empty/);
  });
});
