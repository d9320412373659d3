import { describe, expect, it } from 'vitest';
import { createFinalFailures } from '../../../host/router/final-failures.ts';

describe('final failures', () => {
  it('makes a failed run with a denied message final and withheld, keeping both reasons for the owner', () => {
    const f = createFinalFailures();
    f.withheld(7, 'the owner did not approve its message');
    expect(f.settle(7, { ok: false, reason: 'agent error: message not sent' })).toEqual({
      ok: false,
      reason: 'the owner did not approve its message (agent error: message not sent)',
      retryable: false,
      withheld: true,
    });
  });

  it('makes a run the provider refused the key for final, not withheld', () => {
    const f = createFinalFailures();
    f.final(8, 'the LLM provider rejected the host API key (HTTP 401)');
    expect(f.settle(8, { ok: false, reason: 'agent error: 502' })).toEqual({
      ok: false,
      reason: 'the LLM provider rejected the host API key (HTTP 401) (agent error: 502)',
      retryable: false,
    });
  });

  it('makes a run whose provider hung a transient failure: not retried, and not one the owner must fix', () => {
    const f = createFinalFailures();
    f.transient(12, 'the LLM provider did not start answering within 5 s');
    expect(f.settle(12, { ok: false, reason: 'agent error: aborted' })).toEqual({
      ok: false,
      reason: 'the LLM provider did not start answering within 5 s (agent error: aborted)',
      retryable: false,
      transient: true,
    });
    // Something the owner must fix outranks a passing failure, whichever came first.
    f.transient(13, 'hung');
    f.final(13, 'provider 401');
    expect(f.settle(13, { ok: false, reason: 'x' })).toEqual({
      ok: false,
      reason: 'provider 401 (x)',
      retryable: false,
    });
    f.final(14, 'provider 401');
    f.transient(14, 'hung');
    expect(f.settle(14, { ok: false, reason: 'x' })).not.toHaveProperty('transient');
  });

  it('lets a denial win over an earlier note, leaves successes alone, and forgets a run once settled', () => {
    const f = createFinalFailures();
    f.final(9, 'provider 401');
    f.withheld(9, 'denied');
    expect(f.settle(9, { ok: false, reason: 'x' })).toMatchObject({ withheld: true, reason: 'denied (x)' });
    expect(f.settle(9, { ok: false, reason: 'again' })).toEqual({ ok: false, reason: 'again' });
    f.withheld(10, 'denied');
    // The agent got past the denial and answered otherwise: nothing to change.
    expect(f.settle(10, { ok: true, reason: 'completed' })).toEqual({ ok: true, reason: 'completed' });
    // Other runs are not touched.
    expect(f.settle(11, { ok: false, reason: 'y' })).toEqual({ ok: false, reason: 'y' });
  });
});
