import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { GuardedPathError } from '../../../host/safe-fs/guarded-path-error.ts';
import { openGuardedRoot } from '../../../host/safe-fs/guarded-root.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs('carapace-guarded-');

/** A root folder beside an outside folder holding the "database" a swap would aim at. */
function setup() {
  const dir = tempDir();
  const root = path.join(dir, 'group');
  const outside = path.join(dir, 'host');
  fs.mkdirSync(root);
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'carapace.db'), 'the host database');
  return { dir, root, outside };
}

/** The problem kind a promise is refused with, or "ok". */
async function problemOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (error instanceof GuardedPathError) return error.problem;
    throw error;
  }
}

describe('a guarded root', () => {
  it('reads, stats, writes, lists and removes plain files and folders inside it', async () => {
    const t = setup();
    fs.mkdirSync(path.join(t.root, 'a'));
    fs.writeFileSync(path.join(t.root, 'a', 'note.txt'), 'hello');
    const g = await openGuardedRoot(t.root);
    const read = await g.readFile('a/note.txt', { maxBytes: 5 });
    expect(read.bytes.toString()).toBe('hello');
    expect(read.realPath).toBe(path.join(t.root, 'a', 'note.txt'));
    expect((await g.stat('a')).isDirectory()).toBe(true);
    expect(g.statSync('a/note.txt')?.size).toBe(5);
    expect(g.statSync('a/none')).toBeNull();
    await g.writeFileAtomic('media/2026-01-01/x.bin', Buffer.from([1, 2, 3]));
    expect(fs.readFileSync(path.join(t.root, 'media/2026-01-01/x.bin'))).toEqual(Buffer.from([1, 2, 3]));
    expect(fs.readdirSync(path.join(t.root, 'media/2026-01-01'))).toEqual(['x.bin']);
    const walked = [];
    for await (const entry of g.walk()) walked.push(entry.relPath);
    expect(walked.sort()).toEqual(['a', 'a/note.txt', 'media', 'media/2026-01-01', 'media/2026-01-01/x.bin']);
    expect(g.readDirSync('a').map((d) => d.name)).toEqual(['note.txt']);
    await g.remove('a/note.txt');
    expect(fs.existsSync(path.join(t.root, 'a', 'note.txt'))).toBe(false);
  });

  it('refuses a symlink at the last component, even one that points inside', async () => {
    const t = setup();
    fs.symlinkSync('../host/carapace.db', path.join(t.root, 'f'));
    fs.writeFileSync(path.join(t.root, 'inside.txt'), 'x');
    fs.symlinkSync('inside.txt', path.join(t.root, 'alias'));
    const g = await openGuardedRoot(t.root);
    expect(await problemOf(g.readFile('f', { maxBytes: 1000 }))).toBe('symlink');
    expect(await problemOf(g.readFile('alias', { maxBytes: 1000 }))).toBe('symlink');
    // stat and remove name the link itself, never its target.
    expect((await g.stat('f')).isSymbolicLink()).toBe(true);
    await g.remove('f');
    expect(fs.readFileSync(path.join(t.outside, 'carapace.db'), 'utf8')).toBe('the host database');
  });

  it('refuses a path through a symlinked folder that leads outside, for every operation', async () => {
    const t = setup();
    fs.symlinkSync('../host', path.join(t.root, 'media'));
    fs.mkdirSync(path.join(t.outside, 'deeper'));
    fs.writeFileSync(path.join(t.outside, 'deeper', 'secret'), 'x');
    const g = await openGuardedRoot(t.root);
    expect(await problemOf(g.readFile('media/carapace.db', { maxBytes: 1000 }))).toBe('escapes-root');
    // Its folder is opened without following: the link itself is refused before anything is looked up in it.
    expect(await problemOf(g.stat('media/carapace.db'))).toBe('symlink');
    expect(() => g.statSync('media/carapace.db')).toThrow(GuardedPathError);
    // A folder deeper than the link opens (the kernel follows links on the way), and the descriptor says where.
    expect(await problemOf(g.stat('media/deeper/secret'))).toBe('escapes-root');
    expect(() => g.statSync('media/deeper/secret')).toThrow(/outside the folder/);
    expect(() => g.readDirSync('media')).toThrow(/symlink/);
    expect(await problemOf(g.writeFileAtomic('media/planted', Buffer.from('x')))).toBe('symlink');
    expect(await problemOf(g.mkdirp('media/sub'))).toBe('symlink');
    expect(await problemOf(g.remove('media/carapace.db'))).toBe('symlink');
    const walked = [];
    for await (const entry of g.walk()) walked.push(entry.relPath);
    expect(walked).toEqual(['media']);
    expect(fs.readdirSync(t.outside).sort()).toEqual(['carapace.db', 'deeper']);
  });

  it('refuses paths that leave the root by their spelling', async () => {
    const t = setup();
    const g = await openGuardedRoot(t.root);
    expect(await problemOf(g.readFile('../host/carapace.db', { maxBytes: 1000 }))).toBe('escapes-root');
    expect(await problemOf(g.readFile(path.join(t.outside, 'carapace.db'), { maxBytes: 1000 }))).toBe(
      'escapes-root',
    );
    expect(await problemOf(g.writeFileAtomic('a/../../host/x', Buffer.from('x')))).toBe('escapes-root');
  });

  it('refuses a hard link, which may be a second name of a file outside', async () => {
    const t = setup();
    fs.linkSync(path.join(t.outside, 'carapace.db'), path.join(t.root, 'db'));
    const g = await openGuardedRoot(t.root);
    expect(await problemOf(g.readFile('db', { maxBytes: 1000 }))).toBe('linked');
  });

  it('hands a caller the descriptor of a plain file only, so an fchmod cannot reach through a link', async () => {
    const t = setup();
    fs.writeFileSync(path.join(t.root, 'AGENT.md'), 'memory', { mode: 0o644 });
    fs.symlinkSync(path.join(t.outside, 'carapace.db'), path.join(t.root, 'swapped'));
    fs.linkSync(path.join(t.outside, 'carapace.db'), path.join(t.root, 'hard'));
    fs.chmodSync(path.join(t.outside, 'carapace.db'), 0o600);
    const g = await openGuardedRoot(t.root);
    const addGroupWrite = (rel: string) =>
      g.withFileSync(rel, (fd, stats) => fs.fchmodSync(fd, stats.mode | 0o020));
    addGroupWrite('AGENT.md');
    expect(fs.statSync(path.join(t.root, 'AGENT.md')).mode & 0o777).toBe(0o664);
    expect(() => addGroupWrite('swapped')).toThrow(/symlink/);
    expect(() => addGroupWrite('hard')).toThrow(/hard link/);
    expect(fs.statSync(path.join(t.outside, 'carapace.db')).mode & 0o777).toBe(0o600);
  });

  it('refuses a FIFO without blocking on it, a folder read as a file, and a file past the limit', async () => {
    const t = setup();
    execFileSync('mkfifo', [path.join(t.root, 'pipe')]);
    fs.mkdirSync(path.join(t.root, 'dir'));
    fs.writeFileSync(path.join(t.root, 'big'), 'x'.repeat(11));
    const g = await openGuardedRoot(t.root);
    expect(await problemOf(g.readFile('pipe', { maxBytes: 1000 }))).toBe('not-regular');
    expect(await problemOf(g.readFile('dir', { maxBytes: 1000 }))).toBe('not-regular');
    expect(await problemOf(g.readFile('big', { maxBytes: 10 }))).toBe('too-large');
    expect(await problemOf(g.readFile('none', { maxBytes: 10 }))).toBe('missing');
  });

  it('writes into the folder it checked even when that folder is swapped for a symlink mid-write', async () => {
    const t = setup();
    const g = await openGuardedRoot(t.root);
    await g.mkdirp('media/day');
    // Swap the day folder for a symlink to the host folder after it was made: a write that checked the
    // name and then used it lands in the host folder; one through the descriptor lands where it checked.
    fs.renameSync(path.join(t.root, 'media/day'), path.join(t.root, 'media/moved'));
    fs.symlinkSync(t.outside, path.join(t.root, 'media/day'));
    expect(await problemOf(g.writeFileAtomic('media/day/file', Buffer.from('x')))).toBe('symlink');
    expect(fs.readdirSync(t.outside)).toEqual(['carapace.db']);
  });

  it('refuses a folder where a file stands on the way', async () => {
    const t = setup();
    fs.writeFileSync(path.join(t.root, 'media'), 'not a folder');
    const g = await openGuardedRoot(t.root);
    expect(await problemOf(g.writeFileAtomic('media/day/file', Buffer.from('x')))).toBe('not-directory');
  });
});
