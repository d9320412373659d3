-- Channel contract v2. The outbox gains the dead-letter status (a permanent failure: chat gone, bot removed,
-- no such channel), which SQLite can only add to a CHECK by rebuilding the table. Ids and order are kept.
CREATE TABLE outbox_v2 (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  idempotency_key  TEXT NOT NULL UNIQUE,
  group_id         TEXT,
  channel          TEXT NOT NULL,
  chat_id          TEXT NOT NULL,
  run_id           INTEGER,
  text             TEXT NOT NULL,
  status           TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'dead')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  INTEGER NOT NULL,
  last_error       TEXT,
  created_at       TEXT NOT NULL,
  sent_at          TEXT
);
INSERT INTO outbox_v2 (id, idempotency_key, group_id, channel, chat_id, run_id, text, status, attempts,
                       next_attempt_at, last_error, created_at, sent_at)
  SELECT id, idempotency_key, group_id, channel, chat_id, run_id, text, status, attempts,
         next_attempt_at, last_error, created_at, sent_at FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_v2 RENAME TO outbox;
CREATE INDEX outbox_pending ON outbox (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX outbox_by_chat ON outbox (channel, chat_id, id);

-- The platform's ids of what a delivered piece became (one piece may be several platform messages), so the
-- host can tell a reply to the bot, or its own message echoed back, from everything else.
CREATE TABLE outbox_platform_ids (
  channel      TEXT    NOT NULL,
  chat_id      TEXT    NOT NULL,
  platform_id  TEXT    NOT NULL,
  outbox_id    INTEGER NOT NULL,
  position     INTEGER NOT NULL,
  PRIMARY KEY (channel, chat_id, platform_id)
) WITHOUT ROWID;
CREATE INDEX outbox_platform_ids_by_row ON outbox_platform_ids (outbox_id, position);

-- Durable key/value state each channel keeps for itself (Telegram's update offset), scoped by channel.
CREATE TABLE channel_state (
  channel  TEXT NOT NULL,
  key      TEXT NOT NULL,
  value    TEXT NOT NULL,
  PRIMARY KEY (channel, key)
) WITHOUT ROWID;

-- Chats that wrote to the bot or added it, registered or not: never their content, only what the owner
-- needs to register one (`carapace chats`, then `carapace groups add <id> --channel <c> --chat <chat id>`).
CREATE TABLE chats_seen (
  channel       TEXT NOT NULL,
  chat_id       TEXT NOT NULL,
  title         TEXT NOT NULL,
  first_seen_at TEXT NOT NULL,
  last_seen_at  TEXT NOT NULL,
  PRIMARY KEY (channel, chat_id)
) WITHOUT ROWID;
