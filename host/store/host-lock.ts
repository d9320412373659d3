import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { HOST_PID_FILE } from './host-pid-file.ts';
import { makePrivateFile } from './open-database.ts';
import { errorCode } from '../errors/error-code.ts';

export class HostLockedError extends Error {}

/**
 * One host per data folder. SQLite's exclusive lock is an OS file lock: it is released the moment the
 * process dies, however it dies, so a crashed host never leaves a stale lock behind (unlike a pid file),
 * and two hosts starting at once cannot both get it (unlike checking for a live socket).
 */
export function acquireHostLock(dataDir: string): { release(): void } {
  const file = path.join(dataDir, 'host.lock');
  makePrivateFile(file);
  const db = new Database(file);
  try {
    db.pragma('busy_timeout = 0');
    db.pragma('locking_mode = EXCLUSIVE');
    // A write in exclusive locking mode takes the lock and keeps it until the connection closes.
    db.exec('CREATE TABLE IF NOT EXISTS host (pid INTEGER)');
    db.prepare('DELETE FROM host').run();
    db.prepare('INSERT INTO host (pid) VALUES (?)').run(process.pid);
  } catch (err) {
    db.close();
    if (errorCode(err)?.startsWith('SQLITE_BUSY')) {
      throw new HostLockedError(
        `another Carapace host is already running with this data folder (${dataDir})`,
      );
    }
    throw err;
  }
  // Beside the lock, for clients that must name a host that does not answer; the lock stays the truth.
  const pidFile = path.join(dataDir, HOST_PID_FILE);
  fs.writeFileSync(pidFile, `${process.pid}\n`, { mode: 0o600 });
  return {
    release: () => {
      fs.rmSync(pidFile, { force: true });
      db.close();
    },
  };
}

/** Taking the host lock (and letting go at once) is the one sure sign that no host runs on the folder. */
export function hostIsRunning(dataDir: string): boolean {
  if (!fs.existsSync(dataDir)) return false;
  try {
    acquireHostLock(dataDir).release();
    return false;
  } catch (err) {
    if (err instanceof HostLockedError) return true;
    throw err;
  }
}

export interface QuietHostLock {
  /** Lets go; with `removeFiles`, first deletes the lock file and any stale pid file, still holding it. */
  release(options?: { removeFiles?: boolean }): void;
  /** Whether the lock file was made by this call (a folder no host has run on yet). */
  created: boolean;
}

/**
 * The host lock for a command that replaces what a stopped host left (restore): held as a host holds it, so
 * no host starts meanwhile, but nothing in the folder changes. An open exclusive transaction takes SQLite's
 * lock without writing the file, and no pid file names this process, so `carapace stop` never signals a
 * restore halfway through. Deleting the lock file while holding it is safe: a host that opened it meanwhile
 * finds it locked, and one that starts after makes its own.
 */
export function holdHostLockQuietly(dataDir: string): QuietHostLock {
  const file = path.join(dataDir, 'host.lock');
  const created = !fs.existsSync(file);
  fs.closeSync(fs.openSync(file, 'a', 0o600));
  const db = new Database(file);
  try {
    db.pragma('busy_timeout = 0');
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    if (created) fs.rmSync(file, { force: true });
    if (errorCode(err)?.startsWith('SQLITE_BUSY')) {
      throw new HostLockedError(`a Carapace host is running with this data folder (${dataDir})`);
    }
    throw err;
  }
  return {
    created,
    release: ({ removeFiles = false } = {}) => {
      if (removeFiles) {
        fs.rmSync(file, { force: true });
        fs.rmSync(path.join(dataDir, HOST_PID_FILE), { force: true });
      }
      db.exec('ROLLBACK');
      db.close();
    },
  };
}
