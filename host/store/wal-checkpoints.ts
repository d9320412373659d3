import fs from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { z } from 'zod';
import type { Logger } from '../logging/logger.ts';
import type { Clock } from '../time/clock.ts';
import type { Db } from './open-database.ts';

/**
 * When the host's WAL is copied back into the database, and by whom. SQLite's automatic checkpoint runs
 * inside the commit that crosses `wal_autocheckpoint` pages: on the message path. The host turns it off
 * (`openStore({ scheduledCheckpoints: true })`) and checkpoints here instead, on a timer whether the host
 * is busy or not, in a worker thread with a connection of its own. Measured with bench-history.ts: a host
 * that never rests never had an idle tick, so the WAL grew to the old 64 MiB bound and a checkpoint of
 * 16–17 k frames then held the event loop 67–146 ms, in the middle of the traffic. PASSIVE checkpoints
 * never wait for a reader or writer, so the host's connection keeps committing while the worker copies;
 * a WAL a checkpoint fully copied is rewritten from its start by the next commit and cut to
 * `journal_size_limit`, which keeps it to about one tick of writes.
 */
export interface WalCheckpointsOptions {
  db: Pick<Db, 'pragma' | 'name'>;
  clock: Clock;
  logger: Pick<Logger, 'warn' | 'debug'>;
  /** How often the WAL is looked at (one stat) and, when it changed, checkpointed. */
  intervalMs?: number;
  /** Past this size something (a long reader) keeps checkpoints from finishing: the host says so. */
  maxWalBytes?: number;
}

export const WAL_CHECK_INTERVAL_MS = 1_000;
export const MAX_WAL_BYTES = 64 * 1024 * 1024;
/**
 * The worker thread's nice value, above the host's (0). Traced in bench-history.ts on the loaded two-core
 * machine, a checkpoint overlapped 8–25% of the slowest 1% of deliveries against 4–7% of all of them: the
 * copy (a second's frames, up to 1,700 at 50 msg/s, and two fsyncs) took the core the event loop was
 * waiting for. The WAL's bound does not depend on it: past MAX_WAL_BYTES the host's connection copies.
 */
export const WORKER_NICE = 10;

export interface WalCheckpoints {
  /** Disarms the timer, ends the worker and checkpoints what is left on the host's connection. */
  stop(): Promise<void>;
  /** For tests and the bench: checkpoints the worker finished, and times the WAL was found past the bound. */
  readonly counts: { checkpoints: number; overBound: number };
  /** The last checkpoint's frames: in the WAL, and copied back into the database. */
  readonly last: () => { log: number; checkpointed: number } | undefined;
  /** Resolves once the checkpoint under way (if any) has answered. */
  settled(): Promise<void>;
}

const checkpointResult = z.union([
  z.object({ ok: z.literal(true), busy: z.number(), log: z.number(), checkpointed: z.number() }),
  z.object({ ok: z.literal(false), error: z.string() }),
]);

/**
 * The worker's code, evaluated as CommonJS: a file of its own would need a second entry point in the
 * esbuild bundle and a TypeScript loader under tsx. It is given the driver's resolved path, so it loads
 * the same better-sqlite3 as the host wherever the host runs from.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('wal_autocheckpoint = 0');
// Linux keeps a nice value per thread (setpriority on the calling thread, which os.setPriority's default
// is): the copy yields the CPU to the host's event loop when the cores are busy. Elsewhere it would be
// the whole process's, the host's too, so it is left alone.
if (workerData.nice !== undefined && process.platform === 'linux') {
  try { require('node:os').setPriority(workerData.nice); } catch { /* not allowed: the copy runs at the host's priority */ }
}
parentPort.on('message', (what) => {
  if (what === 'close') { db.close(); parentPort.close(); return; }
  try {
    // Passes until one finds nothing committed during the one before (or four): the WAL is rewound by
    // the next commit only if it finds every frame copied, and under steady traffic that takes a quick
    // last pass between two commits.
    let r = db.pragma('wal_checkpoint(PASSIVE)')[0];
    for (let pass = 1; pass < 4; pass++) {
      const next = db.pragma('wal_checkpoint(PASSIVE)')[0];
      const settled = next.log === r.log;
      r = next;
      if (settled) break;
    }
    parentPort.postMessage({ ok: true, busy: r.busy, log: r.log, checkpointed: r.checkpointed });
  } catch (err) {
    parentPort.postMessage({ ok: false, error: String((err && err.message) || err) });
  }
});
`;

export function startWalCheckpoints(options: WalCheckpointsOptions): WalCheckpoints {
  const { db, clock, logger } = options;
  const intervalMs = options.intervalMs ?? WAL_CHECK_INTERVAL_MS;
  const maxWalBytes = options.maxWalBytes ?? MAX_WAL_BYTES;
  const walFile = `${db.name}-wal`;
  const counts = { checkpoints: 0, overBound: 0 };
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      file: db.name,
      driver: createRequire(import.meta.url).resolve('better-sqlite3'),
      nice: WORKER_NICE,
    },
  });
  // The host's closer ends it; a worker alone must not keep a process (a test, the CLI) alive.
  worker.unref();
  let previous = walState(walFile);
  // Whether the WAL changed since the last checkpoint: an unchanged one is left alone.
  let dirty = previous.size > 0;
  let inFlight: Promise<void> | undefined;
  let cancel: (() => void) | undefined;
  let last: { log: number; checkpointed: number } | undefined;
  let workerError: Error | undefined;
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  worker.on('error', (err) => {
    workerError = err;
    logger.warn({ err }, 'WAL checkpoint worker failed; checkpoints now run on the host connection');
  });

  const record = (why: string, result: { busy: number; log: number; checkpointed: number }) => {
    last = { log: result.log, checkpointed: result.checkpointed };
    // Frames a reader still needs stay in the WAL; the next checkpoint takes them.
    if (result.checkpointed < result.log) dirty = true;
    logger.debug({ why, ...result }, 'WAL checkpoint');
  };

  /**
   * On the host's own connection: the top-off after each worker checkpoint, at stop, and every tick if
   * the worker is gone (a stall then beats an unbounded WAL).
   */
  const checkpointHere = (why: 'stop' | 'no worker' | 'top-off') => {
    try {
      const [result] = db.pragma('wal_checkpoint(PASSIVE)') as {
        busy: number;
        log: number;
        checkpointed: number;
      }[];
      dirty = false;
      if (result) record(why, result);
    } catch (err) {
      logger.warn({ err, why }, 'WAL checkpoint failed; the next one will try again');
    }
  };

  const checkpointInWorker = () => {
    dirty = false;
    inFlight = new Promise<void>((resolve) => {
      const answered = (raw: unknown) => {
        worker.off('exit', gone);
        const reply = checkpointResult.safeParse(raw);
        if (!reply.success) logger.warn({ raw }, 'WAL checkpoint worker answered something unexpected');
        else if (!reply.data.ok) {
          dirty = true;
          logger.warn({ error: reply.data.error }, 'WAL checkpoint failed; the next one will try again');
        } else {
          counts.checkpoints++;
          record('worker', reply.data);
          // Past the bound the worker has not caught a gap between two commits for a long while: a top-off
          // on the host's connection copies what was committed while it worked (no commit of the host's
          // can land in between), so the next commit rewinds the WAL. A short copy, but it waits on fsync.
          if (walState(walFile).size >= maxWalBytes) checkpointHere('top-off');
        }
        resolve();
      };
      const gone = () => {
        worker.off('message', answered);
        dirty = true;
        resolve();
      };
      worker.once('message', answered);
      worker.once('exit', gone);
      worker.postMessage('checkpoint');
    }).finally(() => (inFlight = undefined));
  };

  const tick = () => {
    const now = walState(walFile);
    if (now.size !== previous.size || now.mtimeMs !== previous.mtimeMs) dirty = true;
    previous = now;
    if (now.size >= maxWalBytes) {
      counts.overBound++;
      logger.warn(
        { walBytes: now.size, maxWalBytes },
        'the WAL is past its bound: a long-running reader (a backup, a CLI query) keeps checkpoints from finishing',
      );
    }
    if (dirty && !inFlight) {
      if (workerError || exited) checkpointHere('no worker');
      else checkpointInWorker();
    }
    cancel = clock.setTimer(tick, intervalMs);
  };
  cancel = clock.setTimer(tick, intervalMs);

  return {
    async stop() {
      cancel?.();
      cancel = undefined;
      await inFlight;
      if (!exited) {
        // Held from here: a stop that awaits an unref'd worker (and the clock's unref'd timer) alone would
        // let node leave with the stop unsettled, exit 13, before the WAL's last copy (the failed-start test).
        worker.ref();
        worker.postMessage('close');
        // A worker that never closes must not hold the host's stop.
        const cancelTerminate = clock.setTimer(() => void worker.terminate(), 2_000);
        await exit;
        cancelTerminate();
      }
      if (walState(walFile).size > 0) checkpointHere('stop');
    },
    counts,
    last: () => last,
    settled: () => inFlight ?? Promise.resolve(),
  };
}

function walState(file: string): { size: number; mtimeMs: number } {
  try {
    const stat = fs.statSync(file);
    return { size: stat.size, mtimeMs: stat.mtimeMs };
  } catch {
    return { size: 0, mtimeMs: 0 };
  }
}
