import { describe, expect, it } from 'vitest';
import { createRunSignals } from '../../../host/router/run-signals.ts';

describe('run signals', () => {
  it('fires the signal of a run when it ends, with the reason', () => {
    const signals = createRunSignals();
    const signal = signals.signal(1);
    expect(signal.aborted).toBe(false);
    signals.end(1, 'the container stopped');
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe('the container stopped');
  });

  it('hands a request that arrives after its run ended a signal that has already fired', () => {
    const signals = createRunSignals();
    signals.end(7, 'the run ended');
    const late = signals.signal(7);
    expect(late.aborted).toBe(true);
    expect((late.reason as Error).message).toBe('the run ended');
    expect(signals.signal(8).aborted).toBe(false);
  });

  it('keeps the first reason when a run is ended twice', () => {
    const signals = createRunSignals();
    signals.end(3, 'first');
    signals.end(3, 'second');
    expect((signals.signal(3).reason as Error).message).toBe('first');
  });

  it('remembers a bounded number of ended runs, forgetting the oldest first', () => {
    const signals = createRunSignals();
    for (let id = 1; id <= 5000; id++) signals.end(id);
    expect(signals.signal(5000).aborted).toBe(true);
    expect(signals.signal(1000).aborted).toBe(true);
    expect(signals.signal(1).aborted).toBe(false);
  });
});
