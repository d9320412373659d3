-- Every statement the host runs on a hot path or for status reads what is pending or recent, never the whole
-- history: these indexes hold only live rows (pending, dead, open) or lead with what the query fixes.
-- test/unit/store/query-plans.test.ts fails on a statement that scans a table growing with history.

-- A chat's pending pieces, for the dispatcher's "no older piece of this chat is still backing off" check.
CREATE INDEX outbox_pending_by_chat ON outbox (channel, chat_id, id) WHERE status = 'pending';
-- Dead letters are rare; `status` counts them and `doctor` lists the newest.
CREATE INDEX outbox_dead ON outbox (id) WHERE status = 'dead';
-- Triggering messages per group: "has this group something to answer past its cursor" without reading its
-- history.
CREATE INDEX messages_triggers ON messages (group_id, id) WHERE triggers = 1;
-- One day's usage for `status`, grouped as it is shown.
CREATE INDEX gateway_usage_by_day ON gateway_usage (day, group_id, model);
-- Open tasks per group (status shows each group's count) and per creating run (retention keeps those runs).
CREATE INDEX tasks_open_by_group ON tasks (group_id) WHERE status IN ('active', 'paused');
CREATE INDEX tasks_open_by_run ON tasks (created_by_run) WHERE status IN ('active', 'paused');

-- Retention rolls gateway usage older than [retention] usage_days up to one row per group, day and model,
-- so the per-run table holds only recent runs and the daily totals survive it.
CREATE TABLE gateway_usage_daily (
  group_id          TEXT    NOT NULL,
  day               TEXT    NOT NULL,
  model             TEXT    NOT NULL,
  requests          INTEGER NOT NULL,
  prompt_tokens     INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  cost_micros       INTEGER NOT NULL,
  PRIMARY KEY (day, group_id, model)
) STRICT;
