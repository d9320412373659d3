import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MIGRATIONS_DIR, migrate, readMigrations } from '../../../host/store/migrate.ts';
import { openDatabase, type Db } from '../../../host/store/open-database.ts';
import { openStore } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

/**
 * Migration 017 (messages indexed in batches) on a database 016 left: every message 016's trigger or
 * backfill indexed stays found, and nothing is indexed twice.
 */
const tempDir = useTempDirs();
const MIGRATIONS = readMigrations(DEFAULT_MIGRATIONS_DIR);

function at016(): { file: string; db: Db; ids: number[] } {
  const file = path.join(tempDir(), 'carapace.db');
  const db = openDatabase(file);
  migrate(
    db,
    MIGRATIONS.filter((m) => m.version <= 16),
  );
  db.prepare(
    "INSERT INTO groups (id, channel, chat_id, name, is_admin, created_at) VALUES ('family', 'local', 'family', 'Family', 0, '2026-01-01')",
  ).run();
  const insert = db.prepare(
    `INSERT INTO messages (group_id, channel, chat_id, external_id, sender_id, sender_name, text, sent_at, received_at)
     VALUES ('family', 'local', 'family', ?, 'ann', 'Ann', ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`,
  );
  const ids = ['alpha one', 'alpha two', 'alpha three', 'alpha four'].map((text, i) =>
    Number(insert.run(`m${i}`, text).lastInsertRowid),
  );
  db.prepare(
    "INSERT INTO memory_notes (group_id, path, text, written_at, author) VALUES ('family', 'memory/a.md', 'alpha note', '2026-01-01', 'owner')",
  ).run();
  return { file, db, ids };
}

const found = (file: string) => {
  const store = openStore({ file });
  try {
    return {
      hits: store.memory
        .search('family', { text: 'alpha', limit: 50 })
        .map((h) => `${h.kind}:${h.id}`)
        .sort(),
      check: store.memory.check(),
      progress: store.memory.backfillProgress(),
      indexed: (store.db.prepare('SELECT count(*) AS n FROM memory_fts').get() as { n: number }).n,
    };
  } finally {
    store.close();
  }
};

describe('migration 017', () => {
  it('keeps a finished index whole and starts the walker past the newest message', () => {
    const { file, db, ids } = at016();
    // As the host's first backfill step left it: nothing was stored before 016, the rest came by trigger.
    db.prepare('UPDATE memory_backfill SET next_id = through + 1').run();
    // 017 and 018 alone: 019 rebuilds every index in its own format (memory-migration-019.test.ts).
    migrate(
      db,
      MIGRATIONS.filter((m) => m.version <= 18),
    );
    expect(db.prepare('SELECT count(*) AS n FROM memory_fts').get()).toEqual({ n: 5 });
    expect(db.prepare('SELECT next_id FROM memory_backfill').get()).toEqual({
      next_id: Math.max(...ids) + 1,
    });
    db.close();
    const after = found(file);
    expect(after.hits).toEqual([...ids.map((id) => `message:${id}`), 'note:1'].sort());
    expect(after.check).toMatchObject({ ok: true, missing: 0, extra: 0 });
  });

  it('starts an unfinished backfill over, so rows 016’s trigger indexed are not indexed twice', () => {
    const { file, db, ids } = at016();
    // As an upgrade to 016 left it midway: the first two were history, the backfill has done the first.
    db.prepare('UPDATE memory_backfill SET through = ?, next_id = ?').run(ids[1], ids[1]);
    db.prepare('DELETE FROM memory_fts WHERE rowid = ?').run(ids[1]);
    db.close();
    const after = found(file);
    expect(after.progress).toMatchObject({ nextId: 0, done: false });
    expect(after.indexed).toBe(1); // the note alone
    expect(after.hits).toEqual([...ids.map((id) => `message:${id}`), 'note:1'].sort()); // read while waiting
    expect(after.check).toMatchObject({ ok: true, missing: 0, extra: 0 });
    const store = openStore({ file });
    while (!store.memory.backfillStep(2).done) {
      /* step */
    }
    store.close();
    expect(found(file)).toMatchObject({ indexed: 5, check: { ok: true, missing: 0, extra: 0 } });
  });
});
