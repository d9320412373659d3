import Database from 'better-sqlite3';
import { createGroupsStore } from './groups-store.ts';
import { registerMemoryTerms } from './memory-terms.ts';
import { createOutboxStore } from './outbox-store.ts';
import { createRunsStore } from './runs-store.ts';

/**
 * The database as `carapace status` and `usage` read it: opened read-only, without migrating it or setting its journal
 * mode, so reading it needs no write access and takes no write lock while a host runs. A database no host
 * has migrated to this version yet lacks tables: creating a store then throws "no such table".
 */
export function openStoreReadOnly(file: string, now: () => Date = () => new Date()) {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    // A host writing at this moment holds the write lock only briefly; a reader waits rather than fails.
    db.pragma('busy_timeout = 5000');
    // Statements on tables the memory index's triggers watch compile those triggers, and so the function.
    registerMemoryTerms(db);
    return {
      db,
      groups: createGroupsStore(db, now),
      runs: createRunsStore(db, now),
      outbox: createOutboxStore(db, now),
      close: () => db.close(),
    };
  } catch (err) {
    db.close();
    throw err;
  }
}
