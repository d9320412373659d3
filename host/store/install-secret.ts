import crypto from 'node:crypto';
import type { Db } from './open-database.ts';

/**
 * Gives the database a new install secret (the one outgoing message ids derive from). A restored database
 * goes back to an older state whose idempotency keys (`run:<id>:<n>`) will be handed out again; with the
 * same secret they would make the ids of messages sent after the backup, which WhatsApp clients drop as
 * seen. Pieces already stored keep their send key, so one re-sent after the restore keeps its id. False
 * when the database predates the secret (its first open creates one).
 */
export function rotateInstallSecret(db: Db): boolean {
  const table = db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'install_secret'")
    .get();
  if (!table) return false;
  db.prepare('UPDATE install_secret SET secret = ? WHERE id = 1').run(crypto.randomBytes(32).toString('hex'));
  return true;
}
