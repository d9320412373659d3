-- How far the agent had acknowledged when the run last sent something. A run that fails after replying
-- is closed up to here (not further), so follow-ups it took in after its last reply are answered again.
ALTER TABLE runs ADD COLUMN replied_through INTEGER NOT NULL DEFAULT 0;
