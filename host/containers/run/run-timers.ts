import type { Clock } from '../../time/clock.ts';

export interface RunTimers {
  /** Restarts the idle timer (once timing has begun). */
  touch(): void;
  /** Starts the hard and idle timers from now; later calls do nothing. */
  beginRun(): void;
  /** Cancels both for good (the process is gone). */
  cancel(): void;
}

/**
 * A run's two deadlines, the same whatever runs it (a Docker container or a pod): the hard one from the run's
 * start, the idle one from its last output. `onExpire` is told which fired; it stops the process.
 */
export function createRunTimers(options: {
  clock: Pick<Clock, 'setTimer'>;
  hardMs: number;
  idleMs: number;
  onExpire(reason: 'hard_timeout' | 'idle_timeout', detail: string): void;
}): RunTimers {
  const { clock, hardMs, idleMs, onExpire } = options;
  let timing = false;
  let cancelled = false;
  let cancelIdle: (() => void) | undefined;
  let cancelHard: (() => void) | undefined;
  const touch = () => {
    if (cancelled || !timing) return;
    cancelIdle?.();
    cancelIdle = clock.setTimer(() => onExpire('idle_timeout', `no output for ${idleMs} ms`), idleMs);
  };
  return {
    touch,
    beginRun() {
      if (timing || cancelled) return;
      timing = true;
      cancelHard = clock.setTimer(() => onExpire('hard_timeout', `still running after ${hardMs} ms`), hardMs);
      touch();
    },
    cancel() {
      cancelled = true;
      cancelHard?.();
      cancelIdle?.();
    },
  };
}
