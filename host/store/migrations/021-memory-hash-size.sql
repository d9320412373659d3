-- The memory index gathers up to 16 MiB of a step's terms in memory before it writes them (FTS5's `hashsize`,
-- 1 MiB by default). Since migration 019 a step of the host's indexer during a burst holds ~14 terms for
-- each of a few thousand messages, nearly all new to the step: at 1 MiB, FTS5 wrote one step as several
-- segments, each sorted and written apart and merged again later. The memory is held only while a step's
-- transaction is open. The setting lives in the index's config row: a reindex keeps it.
INSERT INTO memory_fts (memory_fts, rank) VALUES ('hashsize', 16777216);
