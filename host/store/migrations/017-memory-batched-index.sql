-- Messages enter the memory index in batches, no longer one by one in ingest's own transaction: FTS5 writes
-- a new segment at every commit (and merges them later), which made storing a message cost twice the CPU it
-- cost without the index (issue 37's bench). The backfill's walker becomes the only way in: every message
-- with an id below memory_backfill.next_id is indexed, every one at or past it is waiting. Search reads its
-- group's waiting messages from `messages` directly (host/store/memory-store.ts), so a message is found the
-- moment it is stored; the host's indexer (host/memory/memory-backfill.ts) takes them in every few seconds.
-- A message is committed before it is indexed and ids only grow (AUTOINCREMENT): a crash loses nothing, the
-- walker resumes at next_id.
DROP TRIGGER memory_fts_message_in;
DROP TRIGGER memory_fts_message_out;
DROP TRIGGER memory_fts_message_edit;

-- An upgrade during an unfinished backfill: rows past `through` were indexed by the dropped trigger, above
-- rows that are not, so the index starts over from the store of record (what `carapace memory reindex` does).
INSERT INTO memory_fts (memory_fts) SELECT 'delete-all' FROM memory_backfill WHERE id = 1 AND next_id <= through;
INSERT INTO memory_fts (rowid, body, scope)
  SELECT -id, text, 'g' || hex(group_id) FROM memory_notes
  WHERE (SELECT next_id <= through FROM memory_backfill WHERE id = 1);
UPDATE memory_backfill
  SET next_id = CASE WHEN next_id <= through THEN 0 ELSE (SELECT coalesce(max(id), 0) + 1 FROM messages) END;
-- Where the walker stops is now the newest message, whatever it is when it runs.
ALTER TABLE memory_backfill DROP COLUMN through;

-- Only an indexed message has a row to delete or replace; a waiting one is read from `messages` as it is.
CREATE TRIGGER memory_fts_message_out AFTER DELETE ON messages
WHEN OLD.id < (SELECT next_id FROM memory_backfill WHERE id = 1)
BEGIN
  DELETE FROM memory_fts WHERE rowid = OLD.id;
END;
CREATE TRIGGER memory_fts_message_edit AFTER UPDATE OF text, sender_name, media, group_id ON messages
WHEN OLD.id < (SELECT next_id FROM memory_backfill WHERE id = 1)
BEGIN
  DELETE FROM memory_fts WHERE rowid = OLD.id;
  INSERT INTO memory_fts (rowid, body, scope)
  VALUES (NEW.id, NEW.text || ' ' || NEW.sender_name || ' ' || coalesce(json_extract(NEW.media, '$.fileName'), ''),
          'g' || hex(NEW.group_id));
END;
