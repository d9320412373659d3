-- Scheduled tasks. `schedule_json` holds the protocol's `taskSchedule` ({kind: cron|once|interval, …});
-- cron expressions are evaluated in the configured time zone by the host. Times are epoch milliseconds.
-- `created_by_run` names the run that asked for the task (not a foreign key: the admin group may schedule
-- for another group, and the run row belongs to the admin group).
CREATE TABLE tasks (
  id              TEXT    PRIMARY KEY,
  group_id        TEXT    NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
  prompt          TEXT    NOT NULL,
  schedule_json   TEXT    NOT NULL,
  status          TEXT    NOT NULL DEFAULT 'active'
                  CHECK (status IN ('active', 'paused', 'completed', 'cancelled')),
  next_run_at     INTEGER,
  last_run_at     INTEGER,
  created_by_run  INTEGER,
  created_at      INTEGER NOT NULL,
  -- The scheduler arms its timer from next_run_at of active tasks only: an active task without a next run
  -- would never fire, and a stopped one with a next run would look due to anyone reading the table.
  CHECK ((status = 'active') = (next_run_at IS NOT NULL))
) STRICT;
CREATE INDEX tasks_due ON tasks (next_run_at) WHERE status = 'active';
CREATE INDEX tasks_by_group ON tasks (group_id, created_at);

-- The code guards every change with `WHERE status = …`; these triggers hold the same rules against any
-- other writer: a finished task stays finished, and who a task belongs to never changes.
CREATE TRIGGER tasks_legal_transitions BEFORE UPDATE ON tasks
WHEN OLD.status IN ('completed', 'cancelled')
  OR NEW.id IS NOT OLD.id OR NEW.group_id IS NOT OLD.group_id
  OR NEW.created_by_run IS NOT OLD.created_by_run OR NEW.created_at IS NOT OLD.created_at
BEGIN SELECT RAISE(ABORT, 'a completed or cancelled task cannot change, and no task changes its id, group or origin'); END;
