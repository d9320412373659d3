import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MIGRATIONS_DIR, migrate, readMigrations } from '../../../host/store/migrate.ts';
import { openDatabase } from '../../../host/store/open-database.ts';
import { openStore } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

/**
 * Migration 019 (each word a term of its group) on a database 018 left with a whole index in the old
 * format: search answers the same throughout the rebuild, which is a reindex (resumable, the host usable
 * meanwhile), and nothing is lost or doubled.
 */
const tempDir = useTempDirs();
const MIGRATIONS = readMigrations(DEFAULT_MIGRATIONS_DIR);

function at018(): { file: string; family: number[]; work: number } {
  const file = path.join(tempDir(), 'carapace.db');
  const db = openDatabase(file);
  migrate(
    db,
    MIGRATIONS.filter((m) => m.version <= 18),
  );
  for (const g of ['family', 'work'])
    db.prepare(
      "INSERT INTO groups (id, channel, chat_id, name, is_admin, created_at) VALUES (?, 'local', ?, ?, 0, '2026-01-01')",
    ).run(g, g, g);
  const insert = db.prepare(
    `INSERT INTO messages (group_id, channel, chat_id, external_id, sender_id, sender_name, text, sent_at, received_at, media)
     VALUES (?, 'local', ?, ?, 'ann', 'Ann', ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', ?)`,
  );
  const say = (group: string, key: string, text: string, media: string | null = null) =>
    Number(insert.run(group, group, key, text, media).lastInsertRowid);
  const family = [
    say('family', 'm1', 'the boiler valve, café Nero'),
    say('family', 'm2', 'boiler again'),
    say(
      'family',
      'm3',
      'here is the lease',
      JSON.stringify({ path: 'media/lease.pdf', fileName: 'lease.pdf' }),
    ),
  ];
  const work = say('work', 'm4', 'boiler budget');
  db.prepare(
    "INSERT INTO memory_notes (group_id, path, text, written_at, author) VALUES ('family', 'memory/a.md', 'boiler code 4411', '2026-01-01', 'owner')",
  ).run();
  db.prepare(
    "INSERT INTO memory_documents (group_id, message_id, text, read_at) VALUES ('family', ?, 'boiler clause seven', '2026-01-01')",
  ).run(family[2]);
  // The host's indexer caught up, as 018 leaves a running host.
  db.prepare('UPDATE memory_backfill SET next_id = ?').run(work + 1);
  const rows = db.prepare(
    `INSERT INTO memory_fts (rowid, body, scope)
     SELECT id, text || ' ' || sender_name || ' ' || coalesce(json_extract(media, '$.fileName'), ''), 'g' || hex(group_id)
     FROM messages`,
  );
  rows.run();
  db.close();
  return { file, family, work };
}

describe('migration 019', () => {
  it('rebuilds the index in its group terms, resumably, and search answers the same throughout', () => {
    const { file, family, work } = at018();
    const answers = (store: ReturnType<typeof openStore>) => ({
      family: store.memory
        .search('family', { text: 'boiler' })
        .map((h) => `${h.kind}:${h.id}`)
        .sort(),
      // Diacritics and case as before, and a file's name with the words.
      cafe: store.memory.search('family', { text: 'CAFE' }).map((h) => h.id),
      lease: store.memory.search('family', { text: 'lease' }).map((h) => `${h.kind}:${h.id}`),
      work: store.memory.search('work', { text: 'boiler' }).map((h) => h.id),
    });
    const expected = {
      family: [...family.slice(0, 2).map((id) => `message:${id}`), 'document:1', 'note:1'].sort(),
      cafe: [family[0]],
      lease: [`message:${family[2]}`],
      work: [work],
    };
    let store = openStore({ file });
    // Notes and documents at once; every message waits for the indexer and is read directly meanwhile.
    expect(store.db.prepare('SELECT count(*) AS n FROM memory_fts').get()).toEqual({ n: 2 });
    expect(store.memory.backfillProgress()).toMatchObject({ nextId: 0, done: false });
    expect(answers(store)).toEqual(expected);
    expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
    // A restart midway resumes where the walker stopped.
    const first = store.memory.backfillStep(2);
    store.close();
    store = openStore({ file });
    expect(store.memory.backfillProgress().nextId).toBe(first.nextId);
    expect(answers(store)).toEqual(expected);
    while (!store.memory.backfillStep(2).done) {
      /* step */
    }
    expect(answers(store)).toEqual(expected);
    expect(store.memory.search('family', { text: 'cafe boiler' }).map((h) => h.id)).toEqual([family[0]]);
    expect(store.db.prepare('SELECT count(*) AS n FROM memory_fts').get()).toEqual({ n: 6 });
    expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
    store.close();
  });
});
