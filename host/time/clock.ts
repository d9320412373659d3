/**
 * Time as the host's subsystems see it, so tests can pass a fake one (test/helpers/fake-clock.ts): the
 * approvals' expiry, the scheduler's next firing, the outbox's and the run queue's retries, the IPC
 * keep-alive, retention. `startHost` takes one for all of them. `setTimer` returns its own cancel function;
 * waits, deadlines and repeats built on it are in clock-timers.ts, so the port itself stays two methods.
 */
export interface Clock {
  now(): number;
  setTimer(fn: () => void, ms: number): () => void;
}

/**
 * The real clock. Its timers never keep a stopping host alive (a task weeks away, a pending approval):
 * whoever armed them decides what happens at stop.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return () => clearTimeout(t);
  },
};
