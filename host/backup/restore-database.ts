import Database from 'better-sqlite3';
import { rotateInstallSecret } from '../store/install-secret.ts';
import { MigrationError, schemaVersion } from '../store/migrate.ts';
import { rebaseOutboxFiles, type OutboxFilesPlace } from '../store/outbox-restore.ts';
import { openStore, type Store } from '../store/store.ts';
import { RestoreRefused } from './restore-refused.ts';

/** Checks the archive's database as it came, before anything writes to it; returns its schema version. */
export function inspectArchivedDatabase(file: string): number {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const result = db.pragma('integrity_check', { simple: true });
    if (result !== 'ok') {
      // One problem a line, the first behind a heading: the first few, on one line, say enough.
      const problems = String(result)
        .split('\n')
        .filter((line) => line && !line.startsWith('***'));
      throw new RestoreRefused(
        `the archive's database fails its integrity check (${problems.slice(0, 3).join('; ')}); nothing was restored: use another archive`,
      );
    }
    return schemaVersion(db);
  } finally {
    db.close();
  }
}

/**
 * Brings the unpacked database to this version's schema with the host's own start-up code: openStore runs
 * the same migrations the host runs at start, then builds every store over the result, so a statement the
 * host would run that does not fit fails here, while nothing is swapped yet. Then gives it what a restored
 * database needs: a new install secret (message ids made after the backup never repeat) and pending file
 * pieces pointing at where their copies will be. Returns its schema version now and lines for the report.
 */
export function migrateStagedDatabase(
  file: string,
  deps: { migrationsDir?: string; outboxFiles: OutboxFilesPlace; beforeRepoint?: () => void },
): { version: number; report: string[] } {
  let store: Store;
  try {
    store = openStore({ file, migrationsDir: deps.migrationsDir });
  } catch (err) {
    if (!(err instanceof MigrationError)) throw err;
    throw new RestoreRefused(
      err.newerDatabase
        ? `the archive was made by a newer Carapace than this one (${err.message.split(';')[0]}); nothing was restored: upgrade Carapace (git pull && npm ci), then restore again`
        : `the archive's database does not migrate to this version of Carapace (${err.message}); nothing was restored`,
      { cause: err },
    );
  }
  try {
    deps.beforeRepoint?.();
    // The restored state hands out idempotency keys again that were used after the backup was made: a new
    // secret keeps the message ids made from them new (messaging apps drop a message whose id they saw).
    rotateInstallSecret(store.db);
    return { version: schemaVersion(store.db), report: rebaseOutboxFiles(store.db, deps.outboxFiles) };
  } finally {
    // The last connection's close folds the WAL into the file, so the database moves as one file.
    store.close();
  }
}
