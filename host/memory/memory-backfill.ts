import type { Logger } from '../logging/logger.ts';
import type { BackfillProgress, MemoryStore } from '../store/memory-store.ts';
import type { Clock } from '../time/clock.ts';

export interface MemoryBackfillDeps {
  memory: Pick<MemoryStore, 'backfillStep' | 'backfillProgress'>;
  /** Messages per step; each step is one short transaction. */
  batchSize?: number;
  /** How long new messages wait before they are indexed while few come in (search reads them directly). */
  intervalMs?: number;
  /** How long they wait, at most, during a burst (see `nextWaitMs`). */
  maxIntervalMs?: number;
  clock: Pick<Clock, 'setTimer'>;
  logger: Pick<Logger, 'info' | 'error'>;
}

/**
 * The host's indexer: steps of 4,000 at most (~50 ms of the event loop on an idle machine), every 8 s, every
 * 64 s at most during a burst (3,200 messages a step at 50 a second). A step costs ~0.5 ms whatever it
 * holds, and then per term: the more messages, and the more of one group's, a step holds, the less each
 * costs (at a steady 5 a second, 8 s instead of 2 s took ingest with the index from ~1.8× its CPU without
 * to ~1.5×). Search reads what waits directly, so a longer wait costs it nothing; the figures are in
 * DESIGN.md, "Memory", from scripts/bench/bench-memory.ts.
 */
export const MEMORY_INDEXER = { batchSize: 4000, intervalMs: 8000, maxIntervalMs: 64_000 };

/** Messages taken in one wake that make it a burst: 12.5 a second at the quiet interval. */
export const BURST_MESSAGES = 100;

/**
 * How long the indexer sleeps after a wake that took `taken` messages, having slept `waitedMs`. A step
 * costs per transaction (FTS5 writes a segment per commit, and merges them later), and since migration 019
 * the messages of different groups share no terms, so many small steps during a burst cost ingest half as
 * much again as it costs without the index. During a burst the sleep doubles, up to `maxMs`, so a step
 * holds more messages; once a wake finds few, it is back to `quietMs`. Search is not affected: it reads
 * its group's waiting messages directly.
 */
export function nextWaitMs(taken: number, waitedMs: number, quietMs: number, maxMs: number): number {
  return taken >= BURST_MESSAGES ? Math.min(Math.max(waitedMs, quietMs) * 2, maxMs) : quietMs;
}

/** Lets messages, deliveries and timers that arrived during a step run before the next one. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

const LOG_EVERY = 50_000;

/**
 * Takes stored messages into the memory index, many per transaction (FTS5 writes a segment per commit, so
 * one message per commit cost ingest twice its CPU): the history stored before the index existed (an
 * upgrade) or after a reindex emptied it, and every few seconds what came in since, less often during a
 * burst (`nextWaitMs`). Steps of at most `batchSize` with the event loop free between them, so the host
 * answers meanwhile. Where it is lives in the database: a stop or
 * crash resumes there at the next start, and nothing stored is lost, only not indexed yet.
 */
export function createMemoryBackfill({
  memory,
  batchSize = MEMORY_INDEXER.batchSize,
  intervalMs = MEMORY_INDEXER.intervalMs,
  maxIntervalMs = MEMORY_INDEXER.maxIntervalMs,
  clock,
  logger,
}: MemoryBackfillDeps) {
  let stopped = false;
  let running: Promise<BackfillProgress> | undefined;
  let caughtUp: Promise<BackfillProgress> | undefined;
  let wake: (() => void) | undefined;
  let cancelTimer: (() => void) | undefined;

  async function catchUp(): Promise<BackfillProgress> {
    let progress = memory.backfillProgress();
    const long = progress.through - progress.nextId >= LOG_EVERY;
    if (long)
      logger.info(
        { from: progress.nextId, through: progress.through },
        'indexing stored messages for memory',
      );
    let logged = progress.nextId;
    while (!progress.done && !stopped) {
      progress = memory.backfillStep(batchSize);
      if (progress.nextId - logged >= LOG_EVERY) {
        logged = progress.nextId;
        logger.info({ at: progress.nextId, through: progress.through }, 'memory index backfill');
      }
      await nextTurn();
    }
    if (long && progress.done) logger.info({ through: progress.through }, 'memory index backfill done');
    return progress;
  }

  async function run(onCaughtUp: (p: BackfillProgress) => void): Promise<BackfillProgress> {
    let progress = await catchUp();
    onCaughtUp(progress);
    let waitMs = intervalMs;
    while (!stopped) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        cancelTimer = clock.setTimer(resolve, waitMs);
      });
      const from = progress.nextId;
      progress = await catchUp();
      waitMs = nextWaitMs(progress.nextId - from, waitMs, intervalMs, maxIntervalMs);
    }
    return progress;
  }

  return {
    /** Resolves once what was waiting at the start is indexed (or the indexer stopped); it goes on. */
    start(): Promise<BackfillProgress> {
      if (caughtUp) return caughtUp;
      let onCaughtUp: (p: BackfillProgress) => void = () => undefined;
      caughtUp = new Promise((resolve) => (onCaughtUp = resolve));
      running = run(onCaughtUp).catch((err: unknown) => {
        logger.error({ err }, 'the memory indexer failed; it resumes at the next start');
        const progress = memory.backfillProgress();
        onCaughtUp(progress);
        return progress;
      });
      return caughtUp;
    },
    /** Stops between steps; what waits is indexed at the next start. */
    async stop(): Promise<void> {
      stopped = true;
      cancelTimer?.();
      wake?.();
      await running;
    },
  };
}

/**
 * The host's start step: stored messages not indexed yet (new ones, an upgrade's history, a reindex) are
 * indexed in the background; the returned closer stops it between steps.
 */
export function startMemoryBackfill(
  memory: MemoryBackfillDeps['memory'],
  clock: MemoryBackfillDeps['clock'],
  logger: Pick<Logger, 'child'>,
): () => Promise<void> {
  const backfill = createMemoryBackfill({ memory, clock, logger: logger.child({ subsystem: 'memory' }) });
  void backfill.start();
  return () => backfill.stop();
}
