import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { registerMemoryTerms } from './memory-terms.ts';

export type Db = Database.Database;

/**
 * Creates `file` owner-only (0600), or makes an existing one so. SQLite gives its -wal and -shm files the
 * database file's permissions, so they follow; the data folder being 0700 is one fence, this is the second.
 */
export function makePrivateFile(file: string): void {
  fs.closeSync(fs.openSync(file, 'a', 0o600));
  fs.chmodSync(file, 0o600);
}

/** Opens (creating if needed) the host database with the settings every process must agree on. */
export function openDatabase(file: string): Db {
  if (file !== ':memory:') {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    makePrivateFile(file);
  }
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  // NORMAL is durable across process crashes in WAL mode (only an OS crash can lose the last commit).
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  // The CLI and the host write the same file; wait for the other's lock instead of failing.
  db.pragma('busy_timeout = 5000');
  // The memory index's triggers cut a row into its group's terms (migration 019).
  registerMemoryTerms(db);
  return db;
}
