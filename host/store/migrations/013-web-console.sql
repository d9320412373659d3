-- The web console's sign-in (host/web/): one-time login links and the sessions they were exchanged for.
-- Only SHA-256 hashes of the tokens are stored, so a copy of the database signs nobody in.
CREATE TABLE web_login_links (
  token_hash TEXT    PRIMARY KEY,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at    INTEGER,
  -- Where the link was asked for (`cli`, `local:owner`), for the audit and the sessions listing.
  issued_to  TEXT    NOT NULL
) STRICT;

CREATE TABLE web_sessions (
  -- A short public id for listing and revoking; the cookie holds a separate secret, stored hashed.
  id           TEXT    PRIMARY KEY,
  token_hash   TEXT    NOT NULL UNIQUE,
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  revoked_at   INTEGER,
  issued_to    TEXT    NOT NULL,
  user_agent   TEXT    NOT NULL
) STRICT;

-- A run's timeline on the console reads its audit rows by run.
CREATE INDEX audit_by_run ON audit (run_id, id);
-- …and the replies it sent.
CREATE INDEX outbox_by_run ON outbox (run_id, id);
