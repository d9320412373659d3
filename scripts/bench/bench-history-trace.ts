/**
 * What a slow delivery in bench-history.ts overlapped (BENCH_HISTORY_TRACE=1): every SQLite statement
 * that took longer than a threshold, on which database, each garbage collection, each WAL checkpoint the
 * worker ran (from its request to its answer) and each time the event loop was held. The statements are
 * observed by wrapping better-sqlite3's Statement methods in this process only, so the host's code is the
 * one measured; the checkpoints by the checkpointer's debug log line and its worker's request.
 */
import Database from 'better-sqlite3';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { round } from './stats.ts';

export interface TraceEvent {
  kind: 'sql' | 'gc' | 'checkpoint' | 'stall';
  /** The database's file (sql), the GC kind, or nothing. */
  where: string;
  what: string;
  start: number;
  end: number;
}

export interface HistoryTrace {
  events: TraceEvent[];
  stop(): void;
}

const SQL_MIN_MS = 0.3;
const STALL_MIN_MS = 3;

export function startHistoryTrace(): HistoryTrace {
  const events: TraceEvent[] = [];
  const probe = new Database(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, unknown>;
  probe.close();
  const originals = new Map<string, unknown>();
  for (const method of ['run', 'get', 'all']) {
    const original = proto[method] as (...args: unknown[]) => unknown;
    originals.set(method, original);
    proto[method] = function timed(this: { source: string; database: { name: string } }, ...args: unknown[]) {
      const start = performance.now();
      try {
        return original.apply(this, args);
      } finally {
        const end = performance.now();
        if (end - start >= SQL_MIN_MS)
          events.push({ kind: 'sql', where: this.database.name, what: this.source, start, end });
      }
    };
  }
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      events.push({
        kind: 'gc',
        where: String((e as { detail?: { kind?: number } }).detail?.kind ?? ''),
        what: 'gc',
        start: e.startTime,
        end: e.startTime + e.duration,
      });
  });
  gc.observe({ entryTypes: ['gc'] });
  // The checkpoint worker is asked with a 'checkpoint' message and answers with one.
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function traced(this: Worker, value: unknown, ...rest: unknown[]) {
    if (value === 'checkpoint') {
      const start = performance.now();
      this.once('message', (answer: unknown) =>
        events.push({
          kind: 'checkpoint',
          where: `worker ${this.threadId}`,
          what: JSON.stringify(answer),
          start,
          end: performance.now(),
        }),
      );
    }
    return (post as (...a: unknown[]) => void).call(this, value, ...rest);
  };
  // The loop held: a 1 ms timer that fires late.
  let last = performance.now();
  const ticker = setInterval(() => {
    const now = performance.now();
    if (now - last - 1 >= STALL_MIN_MS)
      events.push({ kind: 'stall', where: '', what: 'loop held', start: last + 1, end: now });
    last = now;
  }, 1);
  return {
    events,
    stop() {
      clearInterval(ticker);
      gc.disconnect();
      Worker.prototype.postMessage = post;
      for (const [method, original] of originals) proto[method] = original;
    },
  };
}

/** The events that overlapped [from, to], one line each, the longest first. */
export function overlapping(events: TraceEvent[], from: number, to: number): string[] {
  return events
    .filter((e) => e.end >= from && e.start <= to)
    .sort((a, b) => b.end - b.start - (a.end - a.start))
    .slice(0, 6)
    .map(
      (e) =>
        `${e.kind} ${round(e.end - e.start, 2)} ms @${round(e.start - from, 1)} ${e.where.includes('/') ? (e.where.includes('month') ? 'month' : 'empty') : e.where} ${e.what.replace(/\s+/g, ' ').slice(0, 90)}`,
    );
}
