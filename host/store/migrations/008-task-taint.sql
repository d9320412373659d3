-- A task carries the taint of the run that created (or last changed) it: its prompt may have been steered
-- by what that run read. When it fires, its group takes on that taint, so the run it triggers starts with it.
ALTER TABLE tasks ADD COLUMN taint_corruption INTEGER NOT NULL DEFAULT 0 CHECK (taint_corruption IN (0, 1));
ALTER TABLE tasks ADD COLUMN taint_secret INTEGER NOT NULL DEFAULT 0 CHECK (taint_secret IN (0, 1));
