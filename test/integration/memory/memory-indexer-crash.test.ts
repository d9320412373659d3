import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../host/store/store.ts';
import { ROOT } from '../../helpers/processes.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();

function say(store: Store, groupId: string, n: number): number {
  const id = store.messages.insert({
    groupId,
    channel: 'local',
    chatId: groupId,
    externalId: `m${n}`,
    senderId: 'ann',
    senderName: 'Ann',
    text: `note ${n} word${n}`,
    sentAt: new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString(),
    triggers: false,
  });
  if (id === undefined) throw new Error('expected the message to be stored');
  return id;
}

/** Runs one indexer step of `limit` in its own process, killed after it wrote `crashAfter` index rows. */
function crashingStep(file: string, crashAfter: number, limit: number) {
  return new Promise<{ signal: NodeJS.Signals | null; output: string }>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(ROOT, 'test/fixtures/memory-indexer-crash.ts'),
        file,
        String(crashAfter),
        String(limit),
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('exit', (_code, signal) => resolve({ signal, output }));
  });
}

const indexedRows = (store: Store) =>
  (store.db.prepare('SELECT count(*) AS n FROM memory_fts_docsize WHERE id > 0').get() as { n: number }).n;

describe('a crash in the middle of a memory indexer step', () => {
  it('loses nothing and keeps the order: the step is undone whole and the walker takes it again', async () => {
    const file = path.join(tempDir(), 'carapace.db');
    let store = openStore({ file });
    const groups = ['family', 'work'];
    for (const id of groups) store.groups.add({ id, channel: 'local', chatId: id, name: id, isAdmin: false });
    const ids = Array.from({ length: 1500 }, (_, n) => say(store, groups[n % 2] as string, n));
    store.memory.backfillStep(500);
    const before = store.memory.backfillProgress();
    expect(before.nextId).toBe((ids[499] as number) + 1);
    store.close();

    const crash = await crashingStep(file, 400, 1000);
    expect(crash.signal, crash.output).toBe('SIGKILL');

    store = openStore({ file });
    try {
      // Nothing of the killed step stayed: the walker is where it was, and the index holds exactly the
      // messages before it (none missing, none waiting that is indexed already, which would be doubled).
      expect(store.memory.backfillProgress()).toEqual(before);
      expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
      expect(indexedRows(store)).toBe(500);
      // What the killed step held is found meanwhile, read as waiting.
      const inKilledStep = ids[701] as number;
      expect(store.memory.search('work', { text: 'word701' }).map((h) => h.id)).toEqual([inKilledStep]);
      expect(store.memory.search('family', { text: 'word701' })).toEqual([]);

      // The walker resumes there, in id order, and every message is indexed once.
      while (!store.memory.backfillStep(1000).done);
      expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
      expect(indexedRows(store)).toBe(1500);
      expect(store.memory.search('work', { text: 'word701' }).map((h) => h.id)).toEqual([inKilledStep]);
      expect(store.memory.search('family', { text: 'note', limit: 3 }).map((h) => h.id)).toEqual(
        ids
          .filter((_, n) => n % 2 === 0)
          .slice(-3)
          .reverse(),
      );
    } finally {
      store.close();
    }
  });
});
