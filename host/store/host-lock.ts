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
