import fs from 'node:fs';
import path from 'node:path';
import type { Db } from './open-database.ts';

interface PendingFileRow {
  id: number;
  chat_id: string;
  attachment: string;
}

/** The row's attachment, or undefined for one that does not read as one (then it cannot be sent either). */
function readAttachment(json: string): { path: string; fileName: string } | undefined {
  try {
    const a = JSON.parse(json) as { path?: unknown; fileName?: unknown };
    return typeof a.path === 'string' && typeof a.fileName === 'string'
      ? { ...a, path: a.path, fileName: a.fileName }
      : undefined;
  } catch {
    return undefined;
  }
}

/** Where a restore finds the archive's file copies now, and where they will be once it is done. */
export interface OutboxFilesPlace {
  /** The unpacked archive's `outbox-files` (a restore prepares the database before it swaps folders). */
  stagedDir: string;
  /** The data folder's `outbox-files`, which the pieces must name when the host reads them. */
  finalDir: string;
}

/**
 * After a restore: the pending pieces that send a file get their copy's path in this data folder (an archive
 * carries the copies, and may be restored into another folder than the one it was made of). A piece whose
 * copy is not there (an archive made before copies were carried, or a copy lost since) cannot be sent: it is
 * dead-lettered with the reason, so `carapace status` counts it and `carapace doctor` lists it, rather than
 * left to fail at each attempt. Runs on a database already migrated to the current schema. Returns a line
 * for the restore's report when any was.
 */
export function rebaseOutboxFiles(db: Db, place: OutboxFilesPlace): string[] {
  const pending = db
    .prepare<[], PendingFileRow>(
      "SELECT id, chat_id, attachment FROM outbox WHERE status = 'pending' AND attachment IS NOT NULL",
    )
    .all();
  const repoint = db.prepare('UPDATE outbox SET attachment = ? WHERE id = ?');
  const kill = db.prepare("UPDATE outbox SET status = 'dead', last_error = ? WHERE id = ?");
  const lost: string[] = [];
  db.transaction(() => {
    for (const row of pending) {
      const attachment = readAttachment(row.attachment);
      const name = attachment && path.basename(attachment.path);
      if (attachment && name && fs.existsSync(path.join(place.stagedDir, name))) {
        repoint.run(JSON.stringify({ ...attachment, path: path.join(place.finalDir, name) }), row.id);
        continue;
      }
      kill.run(
        `the file to send (${attachment?.fileName ?? 'unnamed'}) is not in the restored archive; ask for it again`,
        row.id,
      );
      lost.push(`${attachment?.fileName ?? 'a file'} to ${row.chat_id}`);
    }
  })();
  return lost.length === 0
    ? []
    : [
        `${lost.length} file(s) waiting to be sent were not in the archive and are dead-lettered (carapace doctor lists them): ${lost.join(', ')}`,
      ];
}
