import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { storeMediaFile } from '../../../host/router/media/media-file.ts';
import { createOutboundFiles } from '../../../host/router/media/outbound-file.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs('carapace-fs-race-');
const HOST_DB = 'SQLite format 3\0 the host database';
const ROUNDS = 150;

/**
 * What a command in the container does to the group folder, in a process of its own so it runs while the
 * host works: swaps a file for a relative symlink to the host's database and back, for a hard link to it
 * and back, and a folder for a symlink to a host folder and back, each swap one rename (atomic, as a
 * command would do it), as fast as it can until killed.
 */
const FLIPPER = `
const fs = require('node:fs');
const [group, hostDir] = process.argv.slice(1);
const at = (p) => group + '/' + p;
const quiet = (f) => { try { f(); } catch {} };
let first = true;
for (;;) {
  quiet(() => { fs.symlinkSync('../../host/carapace.db', at('f.new')); fs.renameSync(at('f.new'), at('f')); });
  quiet(() => { fs.linkSync(hostDir + '/carapace.db', at('h.new')); fs.renameSync(at('h.new'), at('h')); });
  quiet(() => { fs.renameSync(at('dir'), at('dir.away')); fs.symlinkSync(hostDir, at('dir')); });
  quiet(() => { fs.renameSync(at('media/day'), at('media/day.away')); fs.symlinkSync(hostDir + '/drop', at('media/day')); });
  quiet(() => { fs.writeFileSync(at('f.new'), 'inside'); fs.renameSync(at('f.new'), at('f')); });
  quiet(() => { fs.writeFileSync(at('h.new'), 'inside'); fs.renameSync(at('h.new'), at('h')); });
  quiet(() => { fs.unlinkSync(at('dir')); fs.renameSync(at('dir.away'), at('dir')); });
  quiet(() => { fs.unlinkSync(at('media/day')); fs.renameSync(at('media/day.away'), at('media/day')); });
  if (first) { first = false; process.stdout.write('flipping\\n'); }
}
`;

const running: ChildProcess[] = [];
afterEach(async () => {
  for (const child of running.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  }
});

async function startFlipper(group: string, hostDir: string): Promise<void> {
  const child = spawn(process.execPath, ['-e', FLIPPER, group, hostDir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  running.push(child);
  await once(child.stdout!, 'data');
}

/** A group folder beside a host folder, laid out as the flipper expects. */
function setup() {
  const dir = tempDir();
  const group = path.join(dir, 'groups', 'family');
  const hostDir = path.join(dir, 'host');
  fs.mkdirSync(path.join(group, 'dir'), { recursive: true });
  fs.mkdirSync(path.join(group, 'media', 'day'), { recursive: true });
  fs.mkdirSync(path.join(hostDir, 'drop'), { recursive: true });
  fs.writeFileSync(path.join(hostDir, 'carapace.db'), HOST_DB);
  // The same name under the host folder, for reads through the swapped folder.
  fs.writeFileSync(path.join(hostDir, 'x'), HOST_DB);
  fs.writeFileSync(path.join(group, 'f'), 'inside');
  fs.writeFileSync(path.join(group, 'h'), 'inside');
  fs.writeFileSync(path.join(group, 'dir', 'x'), 'inside');
  return { dir, group, hostDir };
}

describe('host reads and writes in a group folder a container is rearranging', () => {
  it('never reads a byte from outside the folder, nor writes one there, whatever the swaps', async () => {
    const t = setup();
    const files = createOutboundFiles({
      groupDir: () => t.group,
      containerGroupDir: '/workspace/group',
      maxBytes: () => 1024,
      stagingDir: path.join(t.dir, 'outbox-files'),
    });
    await startFlipper(t.group, t.hostDir);

    const leaked: Record<string, number> = {};
    const outcomes = new Map<string, number>();
    const count = (key: string) => outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    for (let i = 0; i < ROUNDS; i++) {
      for (const claimed of ['f', '/workspace/group/h', 'dir/x']) {
        const read = await files.read('family', claimed).catch(() => null);
        count(read === null ? 'threw' : read.ok ? `${claimed}: read` : `${claimed}: refused`);
        if (read?.ok && read.file.bytes.toString('utf8').includes('host database'))
          leaked[claimed] = (leaked[claimed] ?? 0) + 1;
      }
      await storeMediaFile(t.group, `media/day/photo-${i}.png`, Buffer.from(`photo ${i}`)).then(
        () => count('store: stored'),
        () => count('store: refused'),
      );
    }

    // No read returned the host's bytes, and the host folder holds what it held: nothing was written
    // through a swapped folder.
    expect({
      leakedReads: leaked,
      writtenOutside: fs.readdirSync(path.join(t.hostDir, 'drop')).length,
    }).toEqual({ leakedReads: {}, writtenOutside: 0 });
    expect(fs.readdirSync(t.hostDir).sort()).toEqual(['carapace.db', 'drop', 'x']);
    expect(fs.readFileSync(path.join(t.hostDir, 'carapace.db'), 'utf8')).toBe(HOST_DB);
    // A refused read is an answer to the run, never an exception (the numbers differ by run: the flipper
    // decides them).
    expect(outcomes.get('threw')).toBeUndefined();
    const total = [...outcomes.values()].reduce((a, b) => a + b, 0);
    expect(total).toBe(ROUNDS * 4);
  });
});
