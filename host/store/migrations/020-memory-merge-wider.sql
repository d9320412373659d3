-- The memory index merges its segments 16 at a time, no longer 4 (FTS5's `automerge`). Every indexer step
-- commits a segment and FTS5 merges them level by level as they pile up, so each posting is rewritten once
-- a level: since 019 the messages of different groups share no terms, that rewriting was most of what the
-- index cost ingest (issue 37's bench: 1.4x the CPU without the index at the host's burst steps, 1.2x at 16).
-- A search reads a term's postings in each segment, so more of them cost it a seek each; the bench measures
-- both (scripts/bench/bench-memory.ts). The setting lives in the index's config row: a reindex keeps it.
INSERT INTO memory_fts (memory_fts, rank) VALUES ('automerge', 16);
