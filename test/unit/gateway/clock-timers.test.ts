import { describe, expect, it } from 'vitest';
import { sleepOn, timeoutSignal } from '../../../host/gateway/clock-timers.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';

describe("the gateway's waits and deadlines on the host's clock", () => {
  it('sleeps until the clock has passed the wait, not before', async () => {
    const time = fakeClock(0);
    let woke = false;
    const slept = sleepOn(time.clock)(300, new AbortController().signal).then(() => (woke = true));
    time.advance(299);
    await Promise.resolve();
    expect(woke).toBe(false);
    time.advance(1);
    await slept;
    expect(woke).toBe(true);
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

  it('aborts a deadline with a TimeoutError once its time has passed', () => {
    const time = fakeClock(0);
    const signal = timeoutSignal(time.clock, 15_000);
    time.advance(14_999);
    expect(signal.aborted).toBe(false);
    time.advance(1);
    expect(signal.aborted).toBe(true);
    expect((signal.reason as DOMException).name).toBe('TimeoutError');
  });
});
