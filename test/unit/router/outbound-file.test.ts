import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createOutboundFiles } from '../../../host/router/media/outbound-file.ts';
import { PNG_1X1, voiceNote } from '../../helpers/media-samples.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs('carapace-outbound-');

function setup(maxBytes = 1024 * 1024) {
  const dir = tempDir();
  const groups = path.join(dir, 'groups');
  fs.mkdirSync(path.join(groups, 'family'), { recursive: true });
  const files = createOutboundFiles({
    groupDir: (id) => path.join(groups, id),
    containerGroupDir: '/workspace/group',
    maxBytes: () => maxBytes,
    stagingDir: path.join(dir, 'outbox-files'),
  });
  const put = (name: string, bytes: string | Buffer) => {
    fs.mkdirSync(path.dirname(path.join(groups, 'family', name)), { recursive: true });
    fs.writeFileSync(path.join(groups, 'family', name), bytes);
  };
  return { dir, groups, files, put };
}

describe('files a run sends', () => {
  it('reads a file of the group folder by relative or container path, typed by its bytes', async () => {
    const t = setup();
    t.put('out/cat.png', PNG_1X1);
    t.put('hello.ogg', voiceNote('hello'));
    t.put('list.csv', 'a,b\n1,2\n');
    expect(await t.files.read('family', 'out/cat.png')).toMatchObject({
      ok: true,
      file: { fileName: 'cat.png', mime: 'image/png', kind: 'photo' },
    });
    expect(await t.files.read('family', '/workspace/group/hello.ogg')).toMatchObject({
      ok: true,
      file: { kind: 'voice', mime: 'audio/ogg; codecs=opus' },
    });
    expect(await t.files.read('family', 'list.csv')).toMatchObject({
      ok: true,
      file: { kind: 'document', mime: 'text/plain', text: 'a,b\n1,2\n' },
    });
  });

  it('refuses paths outside the group folder, through a symlink too, and files over the limit or empty', async () => {
    const t = setup(100);
    const secret = path.join(t.dir, 'secret.txt');
    fs.writeFileSync(secret, 'the host key');
    fs.symlinkSync(secret, path.join(t.groups, 'family', 'link.txt'));
    fs.symlinkSync(t.dir, path.join(t.groups, 'family', 'up'));
    fs.writeFileSync(path.join(t.dir, 'key.txt'), 'another host key');
    fs.linkSync(path.join(t.dir, 'key.txt'), path.join(t.groups, 'family', 'hard.txt'));
    t.put('big.txt', 'x'.repeat(101));
    t.put('empty.txt', '');
    const reason = async (p: string) => {
      const r = await t.files.read('family', p);
      return r.ok ? 'read' : r.reason;
    };
    expect(await reason('link.txt')).toMatch(/is a symlink; send the file itself/);
    expect(await reason('../../secret.txt')).toMatch(/is not in the group folder/);
    expect(await reason('up/secret.txt')).toMatch(/is not in the group folder/);
    expect(await reason('hard.txt')).toMatch(/has more than one name \(a hard link\)/);
    expect(await reason('/etc/passwd')).toMatch(/is not in the group folder/);
    expect(await reason('/workspace/group/../../secret.txt')).toMatch(/is not in the group folder/);
    expect(await reason('big.txt')).toMatch(/larger than 100 bytes/);
    expect(await reason('empty.txt')).toMatch(/is empty/);
    expect(await reason('missing.txt')).toMatch(/there is no file/);
  });

  it('stages a copy the container cannot change: a later write to the original is not what is sent', async () => {
    const t = setup();
    t.put('report.txt', 'version one');
    const read = await t.files.read('family', 'report.txt');
    if (!read.ok) throw new Error(read.reason);
    const staged = await t.files.stage(read.file);
    t.put('report.txt', 'version two');
    expect(fs.readFileSync(staged.path, 'utf8')).toBe('version one');
    expect(path.dirname(staged.path)).toBe(path.join(t.dir, 'outbox-files'));
    expect(fs.statSync(staged.path).mode & 0o777).toBe(0o600);
    // Its size goes with it, for channels that can only name the file (the local console).
    expect(staged.bytes).toBe('version one'.length);
  });
});
