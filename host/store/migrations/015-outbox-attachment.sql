-- A file a reply sends (message.send with an attachment): a host-only copy of it, its name, type and how the
-- channel sends it. JSON; NULL for text pieces. The piece carrying it is delivered once, like any piece.
ALTER TABLE outbox ADD COLUMN attachment TEXT;
