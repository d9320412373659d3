import type { Clock } from '../../host/time/clock.ts';

/** A clock whose time only moves when the test says so; timers fire in due order as it passes them. */
export type FakeClock = ReturnType<typeof fakeClock>;

export function fakeClock(start: number) {
  let now = start;
  let seq = 0;
  const timers = new Map<number, { at: number; ms: number; fn: () => void }>();
  const clock: Clock = {
    now: () => now,
    setTimer(fn, ms) {
      const id = ++seq;
      timers.set(id, { at: now + ms, ms, fn });
      return () => timers.delete(id);
    },
  };
  return {
    clock,
    now: () => now,
    live: () => [...timers.values()],
    /** Time passes with nobody watching (the host is down). */
    jumpTo(t: number) {
      now = t;
    },
    /** `advanceTo(now() + ms)`. */
    advance(ms: number) {
      this.advanceTo(now + ms);
    },
    advanceTo(t: number) {
      for (;;) {
        const next = [...timers.entries()].sort((a, b) => a[1].at - b[1].at)[0];
        if (!next || next[1].at > t) break;
        timers.delete(next[0]);
        now = Math.max(now, next[1].at);
        next[1].fn();
      }
      now = t;
    },
  };
}
