-- Human approvals. Only the host process reads or writes this table: the database is never mounted into a
-- container, so an agent can neither approve its own request nor edit one after the owner saw it.
-- `id` is what the owner types (`approve <id>`). It is never reused, so a replayed or stale id can only
-- ever name the request it was issued for. Times are epoch milliseconds.
CREATE TABLE approvals (
  id           TEXT    PRIMARY KEY,
  run_id       INTEGER,
  group_id     TEXT    NOT NULL,
  operation    TEXT    NOT NULL,
  reason       TEXT    NOT NULL,
  params_json  TEXT    NOT NULL,
  params_hash  TEXT    NOT NULL,
  status       TEXT    NOT NULL DEFAULT 'pending'
               CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'executed')),
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  -- Owner decisions hold who decided (e.g. `local:owner`); expiries hold the cause (`timeout`, `host-restart`…).
  decided_at   INTEGER,
  decided_by   TEXT,
  executed_at  INTEGER
) STRICT;
CREATE INDEX approvals_pending ON approvals (created_at) WHERE status = 'pending';

-- The code guards every change with `WHERE status = …`; these triggers hold the same rules against any other
-- writer: a request is immutable once stored, a decision happens once, and only an approval can execute.
CREATE TRIGGER approvals_legal_transitions BEFORE UPDATE ON approvals
WHEN NOT (
      (OLD.status = 'pending' AND NEW.status IN ('approved', 'denied', 'expired') AND NEW.executed_at IS NULL)
   OR (OLD.status = 'approved' AND NEW.status = 'executed'
       AND NEW.decided_at IS OLD.decided_at AND NEW.decided_by IS OLD.decided_by)
  )
  OR NEW.id IS NOT OLD.id OR NEW.run_id IS NOT OLD.run_id OR NEW.group_id IS NOT OLD.group_id
  OR NEW.operation IS NOT OLD.operation OR NEW.reason IS NOT OLD.reason
  OR NEW.params_json IS NOT OLD.params_json OR NEW.params_hash IS NOT OLD.params_hash
  OR NEW.created_at IS NOT OLD.created_at OR NEW.expires_at IS NOT OLD.expires_at
BEGIN SELECT RAISE(ABORT, 'approvals only move pending -> approved|denied|expired and approved -> executed; the request itself never changes'); END;

-- Finished requests may be pruned some day; an open one (pending, or approved and not yet run) may not vanish.
CREATE TRIGGER approvals_no_delete_open BEFORE DELETE ON approvals
WHEN OLD.status IN ('pending', 'approved')
BEGIN SELECT RAISE(ABORT, 'open approval requests cannot be deleted'); END;
