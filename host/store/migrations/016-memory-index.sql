-- Memory (host/memory/): full-text search over a group's own history and the notes it was asked to keep.
--
-- Whether a message is its owner's own words (host/admin/owner-check.ts, and nothing forwarded, quoted or
-- transcribed from someone else): recalled text that is not is fenced and corrupts the run that reads it.
-- Rows stored before this migration are 0, so they recall fenced: fail closed.
ALTER TABLE messages ADD COLUMN from_owner INTEGER NOT NULL DEFAULT 0 CHECK (from_owner IN (0, 1));

-- A note the group was asked to remember: the file in the group folder (memory/<date>-<slug>.md) is what the
-- owner reads and edits; this row is its indexed copy with what the file cannot say: who wrote it and the
-- taint of the run that wrote it, which every later recall carries.
CREATE TABLE memory_notes (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  group_id         TEXT    NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
  path             TEXT    NOT NULL,
  text             TEXT    NOT NULL,
  written_at       TEXT    NOT NULL,
  author           TEXT    NOT NULL CHECK (author IN ('owner', 'agent')),
  run_id           INTEGER,
  taint_corruption INTEGER NOT NULL DEFAULT 0 CHECK (taint_corruption IN (0, 1)),
  taint_secret     INTEGER NOT NULL DEFAULT 0 CHECK (taint_secret IN (0, 1)),
  UNIQUE (group_id, path)
);

-- The index. Contentless (the text stays in messages and memory_notes only, so the database grows by the
-- index alone) with contentless_delete, so a row leaves by its rowid. A message's rowid is its id, a note's
-- the negative of its id. `scope` holds one token per row, `g` + the hex of the group id: every query is
-- `scope : <own group> AND body : (…)`, so the match itself is limited to the group before a row is read.
CREATE VIRTUAL TABLE memory_fts USING fts5(
  body, scope, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2'
);

-- Kept in step by triggers rather than by the stores' code: every way a row comes or goes (ingest,
-- retention, a group's removal by cascade, a restore, the CLI's own connection) passes through them, in the
-- same transaction as the row itself, so the index cannot miss a write path nobody thought of.
CREATE TRIGGER memory_fts_message_in AFTER INSERT ON messages
BEGIN
  INSERT INTO memory_fts (rowid, body, scope)
  VALUES (NEW.id, NEW.text || ' ' || NEW.sender_name || ' ' || coalesce(json_extract(NEW.media, '$.fileName'), ''),
          'g' || hex(NEW.group_id));
END;
CREATE TRIGGER memory_fts_message_out AFTER DELETE ON messages
BEGIN
  DELETE FROM memory_fts WHERE rowid = OLD.id;
END;
CREATE TRIGGER memory_fts_message_edit AFTER UPDATE OF text, sender_name, media, group_id ON messages
BEGIN
  DELETE FROM memory_fts WHERE rowid = OLD.id;
  INSERT INTO memory_fts (rowid, body, scope)
  VALUES (NEW.id, NEW.text || ' ' || NEW.sender_name || ' ' || coalesce(json_extract(NEW.media, '$.fileName'), ''),
          'g' || hex(NEW.group_id));
END;
CREATE TRIGGER memory_fts_note_in AFTER INSERT ON memory_notes
BEGIN
  INSERT INTO memory_fts (rowid, body, scope) VALUES (-NEW.id, NEW.text, 'g' || hex(NEW.group_id));
END;
CREATE TRIGGER memory_fts_note_out AFTER DELETE ON memory_notes
BEGIN
  DELETE FROM memory_fts WHERE rowid = -OLD.id;
END;
CREATE TRIGGER memory_fts_note_edit AFTER UPDATE OF text, group_id ON memory_notes
BEGIN
  DELETE FROM memory_fts WHERE rowid = -OLD.id;
  INSERT INTO memory_fts (rowid, body, scope) VALUES (-NEW.id, NEW.text, 'g' || hex(NEW.group_id));
END;

-- Messages stored before this migration are indexed by the backfill (host/memory/memory-backfill.ts), a few
-- hundred per short transaction while the host runs: it walks ids up to `through` and remembers where it is.
CREATE TABLE memory_backfill (
  id       INTEGER PRIMARY KEY CHECK (id = 1),
  through  INTEGER NOT NULL,
  next_id  INTEGER NOT NULL
);
INSERT INTO memory_backfill (id, through, next_id) SELECT 1, coalesce(max(id), 0), 0 FROM messages;
