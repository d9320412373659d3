-- Taint outlives a run: what a tainted run read may sit in the group's history or AGENT.md, so later runs
-- of the group start tainted until the owner clears it (carapace groups untaint <id>).
ALTER TABLE groups ADD COLUMN taint_corruption INTEGER NOT NULL DEFAULT 0 CHECK (taint_corruption IN (0, 1));
ALTER TABLE groups ADD COLUMN taint_secret INTEGER NOT NULL DEFAULT 0 CHECK (taint_secret IN (0, 1));
