-- Whether the last message a run sent was its answer (the agent's final text) rather than a progress note.
-- A run that ends without finishing, or is cut off by a host crash, leaves its group a "not finished" notice
-- only when what the group read last was a progress note: an answer already given needs no apology.
ALTER TABLE runs ADD COLUMN last_reply_final INTEGER NOT NULL DEFAULT 0;
