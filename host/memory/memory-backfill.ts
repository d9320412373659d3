import type { Logger } from '../logging/logger.ts';
import type { BackfillProgress, MemoryStore } from '../store/memory-store.ts';

export interface MemoryBackfillDeps {
  memory: Pick<MemoryStore, 'backfillStep' | 'backfillProgress'>;
  /** Messages per step; each step is one short transaction. */
  batchSize?: number;
  logger: Pick<Logger, 'info' | 'error'>;
}

/** Lets messages, deliveries and timers that arrived during a step run before the next one. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

const LOG_EVERY = 50_000;

/**
 * Indexes the history stored before the memory index existed (an upgrade) or after a reindex emptied it,
 * in small steps with the event loop free between them, so the host answers meanwhile (search finds what
 * is indexed so far). Where it is lives in the database: a stop or crash resumes there at the next start.
 */
export function createMemoryBackfill({ memory, batchSize = 500, logger }: MemoryBackfillDeps) {
  let stopped = false;
  let running: Promise<BackfillProgress> | undefined;

  async function run(): Promise<BackfillProgress> {
    let progress = memory.backfillProgress();
    if (progress.done) return progress;
    logger.info({ from: progress.nextId, through: progress.through }, 'indexing stored messages for memory');
    let logged = progress.nextId;
    while (!progress.done && !stopped) {
      progress = memory.backfillStep(batchSize);
      if (progress.nextId - logged >= LOG_EVERY) {
        logged = progress.nextId;
        logger.info({ at: progress.nextId, through: progress.through }, 'memory index backfill');
      }
      await nextTurn();
    }
    if (progress.done) logger.info({ through: progress.through }, 'memory index backfill done');
    return progress;
  }

  return {
    start(): Promise<BackfillProgress> {
      running ??= run().catch((err: unknown) => {
        logger.error({ err }, 'the memory index backfill failed; it resumes at the next start');
        return memory.backfillProgress();
      });
      return running;
    },
    async stop(): Promise<void> {
      stopped = true;
      await running;
    },
  };
}
