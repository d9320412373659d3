import { describe, expect, it } from 'vitest';
import { repeatEvery, sleepOn, timeoutSignal } from '../../../host/time/clock-timers.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';

describe("waits, deadlines and repeats on the host's clock", () => {
  it('repeats once per period the clock passes, and never after it is cancelled', () => {
    const time = fakeClock(0);
    const fired: number[] = [];
    const cancel = repeatEvery(time.clock, () => fired.push(time.now()), 100);
    time.advance(99);
    expect(fired).toEqual([]);
    time.advance(251);
    expect(fired).toEqual([100, 200, 300]);
    cancel();
    expect(time.live()).toEqual([]);
    time.advance(1_000);
    expect(fired).toEqual([100, 200, 300]);
  });

  it('stops repeating when cancelled from inside its own firing', () => {
    const time = fakeClock(0);
    let fired = 0;
    const cancel = repeatEvery(
      time.clock,
      () => {
        fired++;
        if (fired === 2) cancel();
      },
      10,
    );
    time.advance(100);
    expect(fired).toBe(2);
    expect(time.live()).toEqual([]);
  });

  it('sleeps until the clock has passed the wait, and a deadline aborts with a TimeoutError', async () => {
    const time = fakeClock(0);
    let woke = false;
    const slept = sleepOn(time.clock)(300, new AbortController().signal).then(() => (woke = true));
    const deadline = timeoutSignal(time.clock, 300);
    time.advance(299);
    await Promise.resolve();
    expect(woke).toBe(false);
    expect(deadline.aborted).toBe(false);
    time.advance(1);
    await slept;
    expect(woke).toBe(true);
    expect((deadline.reason as DOMException).name).toBe('TimeoutError');
  });

  it('stops sleeping with the reason the signal aborted with, and leaves no timer behind', async () => {
    const time = fakeClock(0);
    const controller = new AbortController();
    const slept = sleepOn(time.clock)(300, controller.signal);
    controller.abort(new Error('client went away'));
    await expect(slept).rejects.toThrow('client went away');
    expect(time.live()).toEqual([]);
    const already = sleepOn(time.clock)(300, controller.signal);
    await expect(already).rejects.toThrow('client went away');
    expect(time.live()).toEqual([]);
  });
});
