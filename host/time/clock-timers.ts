import type { Clock } from './clock.ts';

/**
 * Waits `ms` on the host's clock (a fake one in tests moves it on); rejects with the signal's reason when
 * it aborts first, as `timers/promises`' `setTimeout` does.
 */
export function sleepOn(clock: Pick<Clock, 'setTimer'>): (ms: number, signal: AbortSignal) => Promise<void> {
  return (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        cancel();
        reject(signal.reason);
      };
      const cancel = clock.setTimer(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
}

/** `AbortSignal.timeout(ms)` on the host's clock: aborts with the same `TimeoutError` once `ms` have passed. */
export function timeoutSignal(clock: Pick<Clock, 'setTimer'>, ms: number): AbortSignal {
  const controller = new AbortController();
  clock.setTimer(
    () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    ms,
  );
  return controller.signal;
}

/**
 * `setInterval` on the host's clock: `fn` every `ms` until the returned function is called. Each firing
 * arms the next one, so a fake clock moved far ahead fires it once per period it passes.
 */
export function repeatEvery(clock: Pick<Clock, 'setTimer'>, fn: () => void, ms: number): () => void {
  let cancel: () => void;
  let stopped = false;
  const arm = () => {
    cancel = clock.setTimer(() => {
      if (stopped) return;
      arm();
      fn();
    }, ms);
  };
  arm();
  return () => {
    stopped = true;
    cancel();
  };
}

/** Resolves after `ms` on `clock` (a pause that is never cancelled: for races whose loser does no harm). */
export function waitFor(clock: Pick<Clock, 'setTimer'>, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimer(resolve, ms));
}
