-- Tokens and cost per run, day (in the configured time zone) and model, aggregated by the LLM gateway.
CREATE TABLE gateway_usage (
  run_id            TEXT    NOT NULL,
  group_id          TEXT    NOT NULL,
  day               TEXT    NOT NULL,
  model             TEXT    NOT NULL,
  requests          INTEGER NOT NULL,
  prompt_tokens     INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  cost_micros       INTEGER NOT NULL,
  PRIMARY KEY (run_id, day, model)
) STRICT;
CREATE INDEX gateway_usage_group_day ON gateway_usage (group_id, day);
