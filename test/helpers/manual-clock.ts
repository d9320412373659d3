import type { Clock } from '../../host/time/clock.ts';

/** A timer the manual clock holds: when it is due and how long it was set for. */
export interface HeldTimer {
  at: number;
  ms: number;
}

export interface ManualClock extends Clock {
  /** The timers set and not yet fired or cancelled, in the order they were set. */
  live(): HeldTimer[];
  /** Time moves to `t`, firing each timer it passes in due order (`now()` reads the timer's due time). */
  advanceTo(t: number): void;
  /** `advanceTo(now() + ms)`. */
  advance(ms: number): void;
  /** Time moves to `t` with nobody watching (a host that was down, a busy event loop): no timer fires. */
  jumpTo(t: number): void;
}

/** A clock whose time only moves when the test says so: the host's `Clock` port, for tests. */
export function manualClock(start: number): ManualClock {
  let now = start;
  let seq = 0;
  const timers = new Map<number, HeldTimer & { fn: () => void }>();
  const advanceTo = (t: number) => {
    for (;;) {
      const next = [...timers.entries()].sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
      if (!next || next[1].at > t) break;
      timers.delete(next[0]);
      now = Math.max(now, next[1].at);
      next[1].fn();
    }
    now = t;
  };
  return {
    now: () => now,
    setTimer(fn, ms) {
      const id = ++seq;
      timers.set(id, { at: now + ms, ms, fn });
      return () => void timers.delete(id);
    },
    live: () => [...timers.values()].map(({ at, ms }) => ({ at, ms })),
    advanceTo,
    advance: (ms) => advanceTo(now + ms),
    jumpTo(t) {
      now = t;
    },
  };
}
