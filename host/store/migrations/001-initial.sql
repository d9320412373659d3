-- Groups the host answers in. `agent_cursor` is the id of the last message a successful run took in.
CREATE TABLE groups (
  id            TEXT PRIMARY KEY,
  channel       TEXT NOT NULL,
  chat_id       TEXT NOT NULL,
  name          TEXT NOT NULL,
  is_admin      INTEGER NOT NULL DEFAULT 0 CHECK (is_admin IN (0, 1)),
  network_mode  TEXT NOT NULL DEFAULT 'gateway' CHECK (network_mode IN ('full', 'gateway')),
  agent_cursor  INTEGER NOT NULL DEFAULT 0,
  created_at    TEXT NOT NULL,
  UNIQUE (channel, chat_id)
);

-- Every message of a registered group, triggering or not (the rest is context for the next run).
CREATE TABLE messages (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  group_id        TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
  channel         TEXT NOT NULL,
  chat_id         TEXT NOT NULL,
  external_id     TEXT NOT NULL,
  sender_id       TEXT NOT NULL,
  sender_name     TEXT NOT NULL,
  text            TEXT NOT NULL,
  sent_at         TEXT NOT NULL,
  triggers        INTEGER NOT NULL DEFAULT 0 CHECK (triggers IN (0, 1)),
  received_at     TEXT NOT NULL,
  UNIQUE (channel, chat_id, external_id)
);
CREATE INDEX messages_by_group ON messages (group_id, id);

CREATE TABLE runs (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  group_id          TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
  attempt           INTEGER NOT NULL,
  status            TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
  -- Highest message id handed to the run, and highest one the agent acknowledged taking in.
  given_through     INTEGER NOT NULL,
  acked_through     INTEGER NOT NULL DEFAULT 0,
  replied           INTEGER NOT NULL DEFAULT 0 CHECK (replied IN (0, 1)),
  exit_reason       TEXT,
  started_at        TEXT NOT NULL,
  ended_at          TEXT
);
CREATE INDEX runs_by_group ON runs (group_id, id);
CREATE INDEX runs_running ON runs (status) WHERE status = 'running';

-- Replies are stored before delivery; delivery is at-least-once, keyed for idempotency.
CREATE TABLE outbox (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  idempotency_key  TEXT NOT NULL UNIQUE,
  group_id         TEXT,
  channel          TEXT NOT NULL,
  chat_id          TEXT NOT NULL,
  run_id           INTEGER,
  text             TEXT NOT NULL,
  status           TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  INTEGER NOT NULL,
  last_error       TEXT,
  created_at       TEXT NOT NULL,
  sent_at          TEXT
);
CREATE INDEX outbox_pending ON outbox (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX outbox_by_chat ON outbox (channel, chat_id, id);

-- Every security and lifecycle decision; rows can be added, never changed.
CREATE TABLE audit (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  at         TEXT NOT NULL,
  run_id     INTEGER,
  group_id   TEXT,
  operation  TEXT NOT NULL,
  decision   TEXT NOT NULL,
  taint      TEXT,
  reason     TEXT,
  approver   TEXT,
  details    TEXT
);
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
