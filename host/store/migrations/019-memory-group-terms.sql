-- The memory index keeps each word as a term of its row's group (host/store/memory-terms.ts), no longer one
-- term per word with a `scope` column beside it. Before, a search intersected the group's scope doclist
-- with each word's doclist of every group, so a word every group uses (a date, a name) cost a search as
-- much as the whole month's postings of it between the group's matches (issue 37's bench: p99 over its 50 ms
-- goal). Now a word's postings are clustered by group: a search reads its group's alone.
-- detail = none: a query is words ANDed, never a phrase or a column filter, so positions are not kept (the
-- rank is computed by the store over the group's own matches, not by FTS5's bm25()).
-- The terms are cut by memory_terms(), a function every writing connection registers (open-database.ts);
-- the `ascii` tokenizer only splits them at the spaces between them.
DROP TRIGGER memory_fts_message_out;
DROP TRIGGER memory_fts_message_edit;
DROP TRIGGER memory_fts_note_in;
DROP TRIGGER memory_fts_note_out;
DROP TRIGGER memory_fts_note_edit;
DROP TRIGGER memory_fts_document_in;
DROP TRIGGER memory_fts_document_out;
DROP TRIGGER memory_fts_document_edit;
DROP TABLE memory_fts;

CREATE VIRTUAL TABLE memory_fts USING fts5(
  terms, content = '', contentless_delete = 1, detail = none, tokenize = 'ascii'
);

-- The rebuild is a reindex (`carapace memory reindex`): notes and documents' text at once, every message
-- waiting for the host's indexer, which takes them in small steps while the host runs and resumes where it
-- stopped after a restart; search reads a group's newest waiting messages directly meanwhile.
INSERT INTO memory_fts (rowid, terms) SELECT -id, memory_terms(group_id, text) FROM memory_notes;
INSERT INTO memory_fts (rowid, terms)
  SELECT -(1099511627776 + id), memory_terms(group_id, text) FROM memory_documents;
UPDATE memory_backfill SET next_id = 0;

CREATE TRIGGER memory_fts_message_out AFTER DELETE ON messages
WHEN OLD.id < (SELECT next_id FROM memory_backfill WHERE id = 1)
BEGIN
  DELETE FROM memory_fts WHERE rowid = OLD.id;
END;
CREATE TRIGGER memory_fts_message_edit AFTER UPDATE OF text, sender_name, media, group_id ON messages
WHEN OLD.id < (SELECT next_id FROM memory_backfill WHERE id = 1)
BEGIN
  DELETE FROM memory_fts WHERE rowid = OLD.id;
  INSERT INTO memory_fts (rowid, terms)
  VALUES (NEW.id, memory_terms(NEW.group_id,
          NEW.text || ' ' || NEW.sender_name || ' ' || coalesce(json_extract(NEW.media, '$.fileName'), '')));
END;
CREATE TRIGGER memory_fts_note_in AFTER INSERT ON memory_notes
BEGIN
  INSERT INTO memory_fts (rowid, terms) VALUES (-NEW.id, memory_terms(NEW.group_id, NEW.text));
END;
CREATE TRIGGER memory_fts_note_out AFTER DELETE ON memory_notes
BEGIN
  DELETE FROM memory_fts WHERE rowid = -OLD.id;
END;
CREATE TRIGGER memory_fts_note_edit AFTER UPDATE OF text, group_id ON memory_notes
BEGIN
  DELETE FROM memory_fts WHERE rowid = -OLD.id;
  INSERT INTO memory_fts (rowid, terms) VALUES (-NEW.id, memory_terms(NEW.group_id, NEW.text));
END;
CREATE TRIGGER memory_fts_document_in AFTER INSERT ON memory_documents
BEGIN
  INSERT INTO memory_fts (rowid, terms) VALUES (-(1099511627776 + NEW.id), memory_terms(NEW.group_id, NEW.text));
END;
CREATE TRIGGER memory_fts_document_out AFTER DELETE ON memory_documents
BEGIN
  DELETE FROM memory_fts WHERE rowid = -(1099511627776 + OLD.id);
END;
CREATE TRIGGER memory_fts_document_edit AFTER UPDATE OF text, group_id ON memory_documents
BEGIN
  DELETE FROM memory_fts WHERE rowid = -(1099511627776 + OLD.id);
  INSERT INTO memory_fts (rowid, terms) VALUES (-(1099511627776 + NEW.id), memory_terms(NEW.group_id, NEW.text));
END;
