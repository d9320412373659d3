import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from './open-database.ts';
import { errorMessage } from '../errors/error-message.ts';

export const DEFAULT_MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export class MigrationError extends Error {
  /** The database was made by a newer Carapace: the fix is upgrading, not anything in the database. */
  readonly newerDatabase: boolean;
  constructor(message: string, options?: { cause?: unknown; newerDatabase?: boolean }) {
    super(message, options);
    this.name = 'MigrationError';
    this.newerDatabase = options?.newerDatabase ?? false;
  }
}

const FILE_PATTERN = /^(\d{3,})-([a-z0-9-]+)\.sql$/;

export function readMigrations(dir: string): Migration[] {
  const migrations = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .map((file) => {
      const m = FILE_PATTERN.exec(file);
      if (!m) throw new MigrationError(`migration file "${file}" must be named like 001-some-name.sql`);
      const sql = fs.readFileSync(path.join(dir, file), 'utf8');
      return {
        version: Number(m[1]),
        name: m[2] as string,
        sql,
        checksum: crypto.createHash('sha256').update(sql).digest('hex'),
      };
    })
    .sort((a, b) => a.version - b.version);
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) {
      throw new MigrationError(
        `migrations must be numbered 1, 2, 3… without gaps; found ${m.version} at position ${i + 1}`,
      );
    }
  });
  return migrations;
}

/**
 * Applies every migration not yet applied, each in its own transaction. A failure throws (the host must
 * not start on a half-migrated database), and an applied migration whose file changed since is refused,
 * because the database would no longer match what the code expects.
 */
export function migrate(db: Db, migrations: Migration[]): { applied: number[] } {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL)`);
  const done = new Map(
    (
      db.prepare('SELECT version, checksum FROM schema_migrations').all() as {
        version: number;
        checksum: string;
      }[]
    ).map((r) => [r.version, r.checksum]),
  );
  const known = new Set(migrations.map((m) => m.version));
  for (const version of done.keys()) {
    if (!known.has(version)) {
      throw new MigrationError(
        `the database has migration ${version}, which this version of Carapace does not know; ` +
          'it was created by a newer version: upgrade Carapace or use another data directory',
        { newerDatabase: true },
      );
    }
  }
  const applied: number[] = [];
  const record = db.prepare(
    'INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)',
  );
  for (const m of migrations) {
    const existing = done.get(m.version);
    if (existing !== undefined) {
      if (existing !== m.checksum) {
        throw new MigrationError(
          `migration ${m.version}-${m.name} was changed after it was applied; restore the original file ` +
            'and add the change as a new numbered migration',
        );
      }
      continue;
    }
    try {
      db.transaction(() => {
        db.exec(m.sql);
        record.run(m.version, m.name, m.checksum, new Date().toISOString());
      })();
    } catch (err) {
      throw new MigrationError(`migration ${m.version}-${m.name} failed: ${errorMessage(err)}`, {
        cause: err,
      });
    }
    applied.push(m.version);
  }
  return { applied };
}

/** The highest migration applied to `db`; 0 for a database that has none. */
export function schemaVersion(db: Db): number {
  const table = db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
    .get();
  if (!table) return 0;
  return (db.prepare('SELECT max(version) FROM schema_migrations').pluck().get() as number | null) ?? 0;
}
