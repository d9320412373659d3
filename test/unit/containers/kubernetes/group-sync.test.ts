import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pack as tarPack } from 'tar-stream';
import { describe, expect, it } from 'vitest';
import {
  GroupSyncError,
  packGroupFolder,
  unpackGroupChanges,
  type GroupSnapshot,
} from '../../../../host/containers/kubernetes/group-sync.ts';
import { openGuardedRoot } from '../../../../host/safe-fs/guarded-root.ts';
import { useTempDirs } from '../../../helpers/temp-dir.ts';

const tempDir = useTempDirs();

type Entry = {
  name: string;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device';
  data?: string;
  linkname?: string;
};

/** A tar stream as a pod's `tar -c` could write it, tricks included. */
function tarOf(entries: Entry[]): Readable {
  const tar = tarPack();
  for (const e of entries) {
    const isFile = (e.type ?? 'file') === 'file';
    const data = e.data ?? '';
    const header = {
      name: e.name,
      type: e.type ?? 'file',
      size: isFile ? Buffer.byteLength(data) : 0,
      ...(e.linkname ? { linkname: e.linkname } : {}),
    };
    if (isFile) tar.entry(header, data);
    else tar.entry(header);
  }
  tar.finalize();
  // As the runner gets it: a node stream (the exec's stdout), not tar-stream's own.
  return Readable.from(tar as unknown as AsyncIterable<Buffer>);
}

async function folder(files: Record<string, string> = {}) {
  const dir = tempDir();
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return { dir, root: await openGuardedRoot(dir) };
}

const complete = async () => true;

describe('the group folder taken back from a pod', () => {
  it('refuses entries that leave the folder or are not files, and writes nothing outside it', async () => {
    const parent = tempDir();
    const dir = path.join(parent, 'group');
    fs.mkdirSync(dir);
    const root = await openGuardedRoot(dir);
    const changes = await unpackGroupChanges(
      root,
      tarOf([
        { name: '../escaped.txt', data: 'out' },
        { name: '/etc/absolute.txt', data: 'out' },
        { name: 'ok/../../escaped-too.txt', data: 'out' },
        { name: 'link', type: 'symlink', linkname: '/etc/passwd' },
        { name: 'hard', type: 'link', linkname: 'notes.txt' },
        { name: 'dev', type: 'character-device' },
        { name: './kept.txt', data: 'fine' },
      ]),
      { before: new Map(), maxBytes: 1024, complete },
    );
    expect(changes.written).toEqual(['kept.txt']);
    expect(changes.refused).toHaveLength(6);
    expect(fs.readdirSync(parent)).toEqual(['group']);
    expect(fs.readdirSync(dir).sort()).toEqual(['kept.txt']);
  });

  it('writes only what changed, and removes what went in and is gone, only from a complete copy', async () => {
    const { dir, root } = await folder({ 'same.txt': 'same', 'changed.txt': 'old', 'gone.txt': 'bye' });
    const packed = await packGroupFolder(root, 1024);
    const entries = [
      { name: 'same.txt', data: 'same' },
      { name: 'changed.txt', data: 'new' },
      { name: 'sub/', type: 'directory' as const },
      { name: 'sub/made.txt', data: 'made' },
    ];
    const partial = await unpackGroupChanges(root, tarOf(entries), {
      before: packed.snapshot,
      maxBytes: 1024,
      complete: async () => false,
    });
    expect(partial.removed).toEqual([]);
    expect(fs.existsSync(path.join(dir, 'gone.txt'))).toBe(true);

    const whole = await unpackGroupChanges(root, tarOf(entries), {
      before: packed.snapshot,
      maxBytes: 1024,
      complete,
    });
    // Compared with what went in: the unchanged file is not written, the removal comes with a complete copy.
    expect(whole).toEqual({ written: ['changed.txt', 'sub/made.txt'], removed: ['gone.txt'], refused: [] });
    expect(fs.readFileSync(path.join(dir, 'changed.txt'), 'utf8')).toBe('new');
    expect(fs.readFileSync(path.join(dir, 'sub', 'made.txt'), 'utf8')).toBe('made');
    expect(fs.existsSync(path.join(dir, 'gone.txt'))).toBe(false);
  });

  it('stops at the quota on the way back, and refuses a folder over it on the way in', async () => {
    const { dir, root } = await folder();
    const before: GroupSnapshot = new Map();
    await expect(
      unpackGroupChanges(
        root,
        tarOf([
          { name: 'a.txt', data: 'x'.repeat(600) },
          { name: 'b.txt', data: 'y'.repeat(600) },
        ]),
        { before, maxBytes: 1000, complete },
      ),
    ).rejects.toThrow(GroupSyncError);
    expect(fs.readdirSync(dir)).toEqual(['a.txt']);

    await expect(packGroupFolder(root, 500)).rejects.toThrow(/more than its quota/);
  });

  it('does not carry links into the pod', async () => {
    const { dir, root } = await folder({ 'real.txt': 'real' });
    fs.symlinkSync('/etc/passwd', path.join(dir, 'link'));
    const packed = await packGroupFolder(root, 1024);
    expect([...packed.snapshot.keys()]).toEqual(['real.txt']);
  });
});
