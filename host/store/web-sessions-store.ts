import type { Db } from './open-database.ts';

export interface WebSessionRecord {
  id: string;
  createdAt: number;
  expiresAt: number;
  lastSeenAt: number;
  revokedAt: number | null;
  issuedTo: string;
  userAgent: string;
}

interface SessionRow {
  id: string;
  created_at: number;
  expires_at: number;
  last_seen_at: number;
  revoked_at: number | null;
  issued_to: string;
  user_agent: string;
}

const toRecord = (r: SessionRow): WebSessionRecord => ({
  id: r.id,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  lastSeenAt: r.last_seen_at,
  revokedAt: r.revoked_at,
  issuedTo: r.issued_to,
  userAgent: r.user_agent,
});

/**
 * The web console's login links and sessions, by the SHA-256 of their secrets (the caller hashes). Using a
 * link is one guarded UPDATE, so two tabs racing on one link cannot both sign in.
 */
export function createWebSessionsStore(db: Db) {
  const insertLink = db.prepare(
    'INSERT INTO web_login_links (token_hash, created_at, expires_at, issued_to) VALUES (?, ?, ?, ?)',
  );
  const useLink = db.prepare<[number, string, number], { issued_to: string }>(
    `UPDATE web_login_links SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?
     RETURNING issued_to`,
  );
  const insertSession = db.prepare(
    `INSERT INTO web_sessions (id, token_hash, created_at, expires_at, last_seen_at, issued_to, user_agent)
     VALUES (@id, @tokenHash, @at, @expiresAt, @at, @issuedTo, @userAgent)`,
  );
  const live = db.prepare<[string, number], SessionRow>(
    'SELECT * FROM web_sessions WHERE token_hash = ? AND revoked_at IS NULL AND expires_at > ?',
  );
  // Noted at most once a minute: a page on live updates asks on every event, and a write each time would
  // cost the host more than the listing is worth.
  const seen = db.prepare('UPDATE web_sessions SET last_seen_at = ? WHERE id = ? AND last_seen_at < ?');
  const list = db.prepare<[number], SessionRow>(
    'SELECT * FROM web_sessions WHERE revoked_at IS NULL AND expires_at > ? ORDER BY created_at DESC',
  );
  const revoke = db.prepare('UPDATE web_sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL');
  // Used and lapsed links and ended sessions are of no use to anyone: dropped whenever a link is made.
  const pruneLinks = db.prepare('DELETE FROM web_login_links WHERE used_at IS NOT NULL OR expires_at <= ?');
  const pruneSessions = db.prepare(
    'DELETE FROM web_sessions WHERE revoked_at IS NOT NULL OR expires_at <= ?',
  );

  return {
    addLink(tokenHash: string, at: number, expiresAt: number, issuedTo: string): void {
      pruneLinks.run(at);
      pruneSessions.run(at);
      insertLink.run(tokenHash, at, expiresAt, issuedTo);
    },
    /** Marks the link used; returns whom it was issued to, or undefined (unknown, used or expired). */
    useLink(tokenHash: string, at: number): string | undefined {
      return useLink.get(at, tokenHash, at)?.issued_to;
    },
    addSession(s: {
      id: string;
      tokenHash: string;
      at: number;
      expiresAt: number;
      issuedTo: string;
      userAgent: string;
    }): void {
      insertSession.run(s);
    },
    /** The live session holding this token (not revoked, not expired), its last use noted (to the minute). */
    touch(tokenHash: string, at: number): WebSessionRecord | undefined {
      const row = live.get(tokenHash, at);
      if (!row) return undefined;
      if (row.last_seen_at < at - 60_000) {
        seen.run(at, row.id, at - 60_000);
        row.last_seen_at = at;
      }
      return toRecord(row);
    },
    list(at: number): WebSessionRecord[] {
      return list.all(at).map(toRecord);
    },
    revoke(id: string, at: number): boolean {
      return revoke.run(at, id).changes === 1;
    },
  };
}

export type WebSessionsStore = ReturnType<typeof createWebSessionsStore>;
