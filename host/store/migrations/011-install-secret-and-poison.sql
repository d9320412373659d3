-- Outgoing message ids must be this install's own: WhatsApp clients silently drop a message whose id they
-- have already seen, and idempotency keys (`run:1:1`) repeat in every fresh database and after a restore.
-- Each piece's send key is derived from this random secret when the piece is stored, and kept with it, so
-- a re-send of the piece reuses its id. A restore gives the restored database a new secret.
CREATE TABLE install_secret (
  id      INTEGER PRIMARY KEY CHECK (id = 1),
  secret  TEXT NOT NULL
);
INSERT INTO install_secret (id, secret) VALUES (1, lower(hex(randomblob(32))));
ALTER TABLE outbox ADD COLUMN send_key TEXT;
-- Pieces stored before keep the key their id was derived from, so one retried across the upgrade keeps it.
UPDATE outbox SET send_key = idempotency_key;

-- Sends of a piece that took the channel's connection down with them (a server closing the socket on it):
-- after [outbox] max_connection_drops the piece is dead-lettered instead of dropping the connection again.
ALTER TABLE outbox ADD COLUMN connection_drops INTEGER NOT NULL DEFAULT 0;
