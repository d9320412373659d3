import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_MIGRATIONS_DIR,
  MigrationError,
  migrate,
  readMigrations,
  type Migration,
} from '../../../host/store/migrate.ts';
import { openDatabase, type Db } from '../../../host/store/open-database.ts';
import { openStore } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const INITIAL_SQL = fs.readFileSync(path.join(DEFAULT_MIGRATIONS_DIR, '001-initial.sql'), 'utf8');
/** The shipped migrations as a name → SQL map, so tests can extend or alter copies of them. */
const SHIPPED = Object.fromEntries(
  fs
    .readdirSync(DEFAULT_MIGRATIONS_DIR)
    .filter((f) => f.endsWith('.sql'))
    .map((f) => [f, fs.readFileSync(path.join(DEFAULT_MIGRATIONS_DIR, f), 'utf8')]),
);
const SHIPPED_COUNT = Object.keys(SHIPPED).length;

const tempDir = useTempDirs();
let dir: string;
let dbFile: string;

beforeEach(() => {
  dir = tempDir();
  dbFile = path.join(dir, 'data', 'carapace.db');
});

/** A migrations folder holding the given files. */
function migrationsDir(files: Record<string, string>): string {
  const d = path.join(dir, `migrations-${crypto.randomUUID()}`);
  fs.mkdirSync(d);
  for (const [name, sql] of Object.entries(files)) fs.writeFileSync(path.join(d, name), sql);
  return d;
}

function tables(db: Db): string[] {
  return (
    db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all() as {
      name: string;
    }[]
  )
    .map((r) => r.name)
    .sort();
}

function versions(db: Db): number[] {
  return (
    db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as { version: number }[]
  ).map((r) => r.version);
}

function withDb<T>(fn: (db: Db) => T): T {
  const db = openDatabase(dbFile);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

function catchError(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected an error');
}

describe('readMigrations', () => {
  it('reads the shipped migrations in order with a sha256 checksum of each file', () => {
    const ms = readMigrations(DEFAULT_MIGRATIONS_DIR);
    expect(ms.length).toBeGreaterThanOrEqual(1);
    expect(ms.map((m) => m.version)).toEqual(ms.map((_, i) => i + 1));
    const first = ms[0] as Migration;
    expect(first.name).toBe('initial');
    expect(first.checksum).toBe(crypto.createHash('sha256').update(INITIAL_SQL).digest('hex'));
  });

  it('sorts by number, not by listing order, and ignores files that are not .sql', () => {
    const d = migrationsDir({
      '010-ten.sql': 'SELECT 10;',
      '002-two.sql': 'SELECT 2;',
      '001-one.sql': 'SELECT 1;',
      'README.md': 'notes',
      ...Object.fromEntries([3, 4, 5, 6, 7, 8, 9].map((n) => [`00${n}-n${n}.sql`, `SELECT ${n};`])),
    });
    expect(readMigrations(d).map((m) => m.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it.each(['1-initial.sql', '001_initial.sql', '001-Initial.sql', '001-.sql', 'initial.sql', '001-a b.sql'])(
    'refuses the badly named file %j',
    (name) => {
      const err = catchError(() => readMigrations(migrationsDir({ [name]: 'SELECT 1;' })));
      expect(err).toBeInstanceOf(MigrationError);
      expect(err.message).toContain(name);
      expect(err.message).toMatch(/001-some-name\.sql/);
    },
  );

  it('refuses a gap in the numbering', () => {
    const err = catchError(() =>
      readMigrations(migrationsDir({ '001-a.sql': 'SELECT 1;', '003-c.sql': 'SELECT 3;' })),
    );
    expect(err).toBeInstanceOf(MigrationError);
    expect(err.message).toMatch(/without gaps; found 3 at position 2/);
  });

  it('refuses numbering that does not start at 1', () => {
    expect(() => readMigrations(migrationsDir({ '002-b.sql': 'SELECT 2;' }))).toThrow(MigrationError);
  });

  it('refuses two files with the same number', () => {
    expect(() =>
      readMigrations(migrationsDir({ '001-a.sql': 'SELECT 1;', '001-b.sql': 'SELECT 1;' })),
    ).toThrow(MigrationError);
  });
});

describe('migrate', () => {
  it('creates every table on an empty database and records each migration', () => {
    const store = openStore({ file: dbFile });
    try {
      // Later migrations add tables; these are the ones the host cannot run without.
      expect(tables(store.db)).toEqual(
        expect.arrayContaining([
          'audit',
          'gateway_usage',
          'groups',
          'messages',
          'outbox',
          'runs',
          'schema_migrations',
        ]),
      );
      const rows = store.db.prepare('SELECT * FROM schema_migrations ORDER BY version').all() as {
        version: number;
        name: string;
        checksum: string;
        applied_at: string;
      }[];
      expect(rows.map((r) => r.version)).toEqual(
        readMigrations(DEFAULT_MIGRATIONS_DIR).map((m) => m.version),
      );
      expect(rows[0]?.name).toBe('initial');
      expect(rows[0]?.checksum).toBe(readMigrations(DEFAULT_MIGRATIONS_DIR)[0]?.checksum);
      expect(Number.isNaN(Date.parse(rows[0]?.applied_at ?? ''))).toBe(false);
    } finally {
      store.close();
    }
  });

  it('applies nothing on an up-to-date database and keeps its data', () => {
    const first = openStore({ file: dbFile });
    first.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
    first.close();

    withDb((db) => {
      expect(migrate(db, readMigrations(DEFAULT_MIGRATIONS_DIR))).toEqual({ applied: [] });
    });
    const again = openStore({ file: dbFile });
    try {
      expect(again.groups.get('family')?.name).toBe('Family');
      expect(versions(again.db)).toEqual(readMigrations(DEFAULT_MIGRATIONS_DIR).map((m) => m.version));
    } finally {
      again.close();
    }
  });

  it('applies only the new migrations on an older database', () => {
    const v1 = migrationsDir({ '001-initial.sql': INITIAL_SQL });
    const v2 = migrationsDir({
      '001-initial.sql': INITIAL_SQL,
      '002-notes.sql': 'CREATE TABLE notes (id INTEGER);',
    });
    withDb((db) => {
      expect(migrate(db, readMigrations(v1)).applied).toEqual([1]);
      expect(migrate(db, readMigrations(v2)).applied).toEqual([2]);
      expect(tables(db)).toContain('notes');
      expect(versions(db)).toEqual([1, 2]);
    });
  });

  it('rolls back a migration that fails: version stays 1 and no table of 002 is left', () => {
    const broken = migrationsDir({
      '001-initial.sql': INITIAL_SQL,
      '002-broken.sql': 'CREATE TABLE half_done (id INTEGER);\nINSERT INTO no_such_table VALUES (1);\n',
    });
    const err = catchError(() => openStore({ file: dbFile, migrationsDir: broken }));
    expect(err).toBeInstanceOf(MigrationError);
    expect(err.message).toMatch(/migration 2-broken failed: .*no_such_table/);
    expect(err.cause).toBeInstanceOf(Error);

    // openStore closed its connection on failure, so the file can be opened and inspected.
    withDb((db) => {
      expect(versions(db)).toEqual([1]);
      expect(tables(db)).not.toContain('half_done');
      expect(tables(db)).toContain('groups');
    });

    // Once the migration is fixed, it applies normally.
    fs.writeFileSync(path.join(broken, '002-broken.sql'), 'CREATE TABLE half_done (id INTEGER);\n');
    // migrate() itself: the domain stores need tables that this reduced set of migrations lacks.
    withDb((db) => {
      expect(migrate(db, readMigrations(broken)).applied).toEqual([2]);
      expect(versions(db)).toEqual([1, 2]);
      expect(tables(db)).toContain('half_done');
    });
  });

  it('refuses a migration whose file changed after it was applied', () => {
    withDb((db) => {
      migrate(db, readMigrations(DEFAULT_MIGRATIONS_DIR));
      const changed = migrationsDir({
        ...SHIPPED,
        '001-initial.sql': `${INITIAL_SQL}\n-- an innocent-looking edit\n`,
      });
      const err = catchError(() => migrate(db, readMigrations(changed)));
      expect(err).toBeInstanceOf(MigrationError);
      expect(err.message).toMatch(/1-initial was changed after it was applied/);
      expect(err.message).toMatch(/new numbered migration/);
    });
  });

  it('refuses a database migrated by a newer version', () => {
    const future = SHIPPED_COUNT + 1;
    const newer = migrationsDir({
      ...SHIPPED,
      [`${String(future).padStart(3, '0')}-future.sql`]: 'CREATE TABLE future (id INTEGER);',
    });
    withDb((db) => migrate(db, readMigrations(newer)));

    const err = catchError(() => openStore({ file: dbFile }));
    expect(err).toBeInstanceOf(MigrationError);
    expect(err.message).toMatch(
      new RegExp(`migration ${future}, which this version of Carapace does not know`),
    );
    expect(err.message).toMatch(/upgrade Carapace/);
    withDb((db) => expect(versions(db)).toHaveLength(future));
  });
});

describe('the audit table', () => {
  it('accepts new rows but rejects UPDATE and DELETE', () => {
    const store = openStore({ file: dbFile });
    try {
      const id = store.audit.record({ operation: 'group.register', decision: 'allow', reason: 'admin' });
      expect(() => store.db.prepare(`UPDATE audit SET decision = 'deny' WHERE id = ?`).run(id)).toThrow(
        /append-only/,
      );
      expect(() => store.db.prepare('DELETE FROM audit WHERE id = ?').run(id)).toThrow(/append-only/);
      expect(() => store.db.prepare('DELETE FROM audit').run()).toThrow(/append-only/);
      expect(store.audit.tail(10).map((r) => [r.id, r.decision])).toEqual([[id, 'allow']]);
    } finally {
      store.close();
    }
  });
});
