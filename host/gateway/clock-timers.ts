import type { Clock } from '../time/clock.ts';

/**
 * Waits `ms` on the host's clock (a fake one in tests moves it on); rejects with the signal's reason when
 * it aborts first, as `timers/promises`' `setTimeout` does.
 */
export function sleepOn(clock: Clock): (ms: number, signal: AbortSignal) => Promise<void> {
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
export function timeoutSignal(clock: Clock, ms: number): AbortSignal {
  const controller = new AbortController();
  clock.setTimer(
    () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    ms,
  );
  return controller.signal;
}
