-- The text of a document the group read (issue 37: "the text of documents the group read"): what the
-- read_attachment tool extracted from a file a message carried, reported by the run that read it. The host
-- cannot extract it itself (the PDF parser is untrusted and runs in the container, host/memory/
-- document-reads.ts), so the text is the reading run's report: kept with that run's secret taint, and always
-- recalled fenced and corrupting, as reading the document would be (a document is nobody's own words).
-- It belongs to its message: retention, the owner's forget and a group's removal delete the message, and the
-- cascade deletes the text and, by trigger, its index row.
CREATE TABLE memory_documents (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  group_id      TEXT    NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
  message_id    INTEGER NOT NULL UNIQUE REFERENCES messages(id) ON DELETE CASCADE,
  text          TEXT    NOT NULL,
  read_at       TEXT    NOT NULL,
  run_id        INTEGER,
  taint_secret  INTEGER NOT NULL DEFAULT 0 CHECK (taint_secret IN (0, 1))
);

-- In memory_fts a document's rowid is −(2^40 + its id): below every note's (−note id), so the three kinds
-- never share a rowid and each is walked apart (host/store/memory-store.ts). A document is read rarely, so
-- it is indexed at once, by trigger, as notes are.
CREATE TRIGGER memory_fts_document_in AFTER INSERT ON memory_documents
BEGIN
  INSERT INTO memory_fts (rowid, body, scope) VALUES (-(1099511627776 + NEW.id), NEW.text, 'g' || hex(NEW.group_id));
END;
CREATE TRIGGER memory_fts_document_out AFTER DELETE ON memory_documents
BEGIN
  DELETE FROM memory_fts WHERE rowid = -(1099511627776 + OLD.id);
END;
CREATE TRIGGER memory_fts_document_edit AFTER UPDATE OF text, group_id ON memory_documents
BEGIN
  DELETE FROM memory_fts WHERE rowid = -(1099511627776 + OLD.id);
  INSERT INTO memory_fts (rowid, body, scope) VALUES (-(1099511627776 + NEW.id), NEW.text, 'g' || hex(NEW.group_id));
END;

-- A run reports the path of the file it read; the message that carried it is found by this index, not by a
-- walk of the group's history (the store's query-plan test refuses such a walk).
CREATE INDEX messages_by_media_path ON messages (group_id, json_extract(media, '$.path')) WHERE media IS NOT NULL;
