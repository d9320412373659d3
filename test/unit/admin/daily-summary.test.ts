import { describe, expect, it } from 'vitest';
import { createDailySummary, nextSummaryAt } from '../../../host/admin/daily-summary.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';

const BERLIN = 'Europe/Berlin';
/** 2026-03-27 12:00 in Berlin (UTC+1); Berlin moves to UTC+2 on Sunday 2026-03-29. */
const FRIDAY_NOON = Date.UTC(2026, 2, 27, 11, 0);
const at = (iso: string) => Date.parse(iso);

function harness(settings: { at: string | undefined; timezone: string }, start = FRIDAY_NOON) {
  const time = fakeClock(start);
  const sent: { key: string; text: string; at: string }[] = [];
  const errors: unknown[] = [];
  let report = 'Spend up to today: $0.0000';
  const summary = createDailySummary({
    clock: time.clock,
    settings: () => settings,
    summary: () => {
      if (report === 'throw') throw new Error('database is locked');
      return report;
    },
    notify: (key, text) => sent.push({ key, text, at: new Date(time.now()).toISOString() }),
    onError: (err) => errors.push(err),
  });
  return {
    time,
    sent,
    errors,
    summary,
    settings,
    setReport: (text: string) => (report = text),
  };
}

describe('daily summary', () => {
  it('sends the day’s report to the admin chats at the set time on the owner’s clock, keyed by the day', () => {
    const h = harness({ at: '21:00', timezone: BERLIN });
    h.summary.start();
    h.time.advanceTo(at('2026-03-27T19:59:59Z'));
    expect(h.sent).toEqual([]);
    h.setReport('Spend up to 2026-03-27 (today: $1.2345)');
    h.time.advanceTo(at('2026-03-27T20:00:00Z')); // 21:00 in Berlin
    expect(h.sent).toEqual([
      {
        key: 'daily-summary:2026-03-27',
        text: 'Daily summary\nSpend up to 2026-03-27 (today: $1.2345)',
        at: '2026-03-27T20:00:00.000Z',
      },
    ]);
    expect(h.time.live()).toHaveLength(1); // armed for the next day, one timer only
  });

  it('keeps to the wall clock across the change to summer time, once a day', () => {
    const h = harness({ at: '21:00', timezone: BERLIN });
    h.summary.start();
    h.time.advanceTo(at('2026-03-31T00:00:00Z'));
    expect(h.sent.map((s) => [s.key, s.at])).toEqual([
      ['daily-summary:2026-03-27', '2026-03-27T20:00:00.000Z'],
      ['daily-summary:2026-03-28', '2026-03-28T20:00:00.000Z'],
      ['daily-summary:2026-03-29', '2026-03-29T19:00:00.000Z'], // UTC+2 from here on
      ['daily-summary:2026-03-30', '2026-03-30T19:00:00.000Z'],
    ]);
  });

  it('sends nothing when unset, and follows a changed setting from the next arming on', () => {
    const h = harness({ at: undefined, timezone: BERLIN });
    h.summary.start();
    expect(h.time.live()).toEqual([]);
    h.time.advanceTo(at('2026-03-28T12:00:00Z'));
    expect(h.sent).toEqual([]);

    h.settings.at = '07:30';
    h.summary.rearm();
    h.settings.timezone = 'UTC';
    h.summary.rearm(); // a second change replaces the armed timer, never adds one
    expect(h.time.live()).toHaveLength(1);
    h.time.advanceTo(at('2026-03-29T07:30:00Z'));
    expect(h.sent.map((s) => s.at)).toEqual(['2026-03-29T07:30:00.000Z']);

    h.settings.at = undefined;
    h.summary.rearm();
    expect(h.time.live()).toEqual([]);
  });

  it('gives a day’s summary the same key after a restart, so the outbox stores it once', () => {
    const first = harness({ at: '21:00', timezone: BERLIN }, at('2026-03-27T19:00:00Z'));
    first.summary.start();
    first.time.advanceTo(at('2026-03-27T20:00:00Z'));
    first.summary.stop();
    expect(first.time.live()).toEqual([]);
    // The host restarts at 21:00:00 sharp: it arms for tomorrow, or fires with the same key.
    const again = harness({ at: '21:00', timezone: BERLIN }, at('2026-03-27T20:00:00Z'));
    again.summary.start();
    again.time.advanceTo(at('2026-03-28T20:00:00Z'));
    expect([...first.sent, ...again.sent].map((s) => s.key)).toEqual([
      'daily-summary:2026-03-27',
      'daily-summary:2026-03-28',
    ]);
  });

  it('reports a report that fails, and still sends the next day’s', () => {
    const h = harness({ at: '21:00', timezone: BERLIN });
    h.summary.start();
    h.setReport('throw');
    h.time.advanceTo(at('2026-03-27T20:00:00Z'));
    expect(h.sent).toEqual([]);
    expect(String(h.errors[0])).toContain('database is locked');
    h.setReport('fine');
    h.time.advanceTo(at('2026-03-28T20:00:00Z'));
    expect(h.sent.map((s) => s.key)).toEqual(['daily-summary:2026-03-28']);
  });

  it('computes the next time strictly after the given instant', () => {
    expect(new Date(nextSummaryAt('21:00', 'UTC', at('2026-03-27T21:00:00Z'))).toISOString()).toBe(
      '2026-03-28T21:00:00.000Z',
    );
    expect(new Date(nextSummaryAt('00:05', 'UTC', at('2026-12-31T23:59:00Z'))).toISOString()).toBe(
      '2027-01-01T00:05:00.000Z',
    );
  });
});
