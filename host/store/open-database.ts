import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

export type Db = Database.Database;

/** Opens (creating if needed) the host database with the settings every process must agree on. */
export function openDatabase(file: string): Db {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  // NORMAL is durable across process crashes in WAL mode (only an OS crash can lose the last commit).
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  // The CLI and the host write the same file; wait for the other's lock instead of failing.
  db.pragma('busy_timeout = 5000');
  return db;
}
