import { describe, expect, it } from 'vitest';
import { MIN_TASK_INTERVAL_MS, taskScheduleSchema } from '../../../container-agent/src/protocol.ts';
import { firstRunAt, nextRunAfter, ScheduleError } from '../../../host/scheduler/next-run.ts';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function scheduleError(fn: () => unknown): ScheduleError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ScheduleError) return err;
    throw err;
  }
  throw new Error('expected a ScheduleError');
}

describe('cron schedules', () => {
  const daily9 = { kind: 'cron', expr: '0 9 * * *' } as const;

  it('evaluates the expression in the configured zone, across the spring DST change', () => {
    // Berlin moves from UTC+1 to UTC+2 on 2025-03-30: 09:00 local is 08:00Z before, 07:00Z after.
    const first = firstRunAt(daily9, at('2025-03-29T00:00:00Z'), 'Europe/Berlin');
    expect(iso(first)).toBe('2025-03-29T08:00:00.000Z');
    const second = nextRunAfter(daily9, first, first, 'Europe/Berlin');
    expect(iso(second)).toBe('2025-03-30T07:00:00.000Z');
    expect(iso(nextRunAfter(daily9, second as number, second as number, 'Europe/Berlin'))).toBe(
      '2025-03-31T07:00:00.000Z',
    );
  });

  it('evaluates it in the configured zone across the autumn change, too', () => {
    const first = firstRunAt(daily9, at('2025-10-25T12:00:00Z'), 'Europe/Berlin');
    expect(iso(first)).toBe('2025-10-26T08:00:00.000Z');
  });

  it('gives a different instant for another zone, never the process zone', () => {
    const now = at('2025-01-15T00:00:00Z');
    expect(iso(firstRunAt(daily9, now, 'America/New_York'))).toBe('2025-01-15T14:00:00.000Z');
    expect(iso(firstRunAt(daily9, now, 'UTC'))).toBe('2025-01-15T09:00:00.000Z');
    expect(iso(firstRunAt(daily9, now, 'Asia/Kolkata'))).toBe('2025-01-15T03:30:00.000Z');
  });

  it('collapses missed periods: the next run after a late firing is the first match after now', () => {
    const hourly = { kind: 'cron', expr: '0 * * * *' } as const;
    const dueAt = at('2025-01-15T03:00:00Z');
    const firedAt = at('2025-01-15T08:20:00Z');
    expect(iso(nextRunAfter(hourly, dueAt, firedAt, 'UTC'))).toBe('2025-01-15T09:00:00.000Z');
  });

  it('accepts nicknames', () => {
    expect(
      iso(firstRunAt({ kind: 'cron', expr: '@daily' }, at('2025-01-15T12:00:00Z'), 'Europe/Berlin')),
    ).toBe('2025-01-15T23:00:00.000Z');
  });

  it('refuses an invalid expression with an error naming it', () => {
    const e = scheduleError(() => firstRunAt({ kind: 'cron', expr: '61 * * * *' }, 0, 'UTC'));
    expect(e.message).toContain('"61 * * * *"');
    expect(e.message).toMatch(/minute/);
    expect(e.message).toContain('five fields');
    expect(
      scheduleError(() => firstRunAt({ kind: 'cron', expr: 'every morning' }, 0, 'UTC')).message,
    ).toContain('"every morning"');
  });

  it('refuses a seconds field, which would fire more often than once a minute', () => {
    const e = scheduleError(() => firstRunAt({ kind: 'cron', expr: '*/5 * * * * *' }, 0, 'UTC'));
    expect(e.message).toContain('"*/5 * * * * *" has 6 fields');
  });

  it('refuses an expression that never matches', () => {
    const e = scheduleError(() => firstRunAt({ kind: 'cron', expr: '0 0 30 2 *' }, 0, 'UTC'));
    expect(e.message).toContain('never matches');
  });

  it('refuses an unknown time zone with the config key to fix', () => {
    const e = scheduleError(() => firstRunAt(daily9, 0, 'Mars/Olympus'));
    expect(e.message).toContain('[assistant].timezone');
  });
});

describe('one-off schedules', () => {
  const now = at('2025-06-01T10:00:00Z');

  it('is due at the given instant, whatever offset it was written with', () => {
    expect(iso(firstRunAt({ kind: 'once', at: '2025-06-01T14:30:00+02:00' }, now, 'UTC'))).toBe(
      '2025-06-01T12:30:00.000Z',
    );
  });

  it('refuses a time in the past, and the present instant', () => {
    const e = scheduleError(() => firstRunAt({ kind: 'once', at: '2025-06-01T11:59:00+02:00' }, now, 'UTC'));
    expect(e.message).toContain('is in the past');
    expect(e.message).toContain('2025-06-01T10:00:00.000Z');
    expect(() => firstRunAt({ kind: 'once', at: '2025-06-01T10:00:00Z' }, now, 'UTC')).toThrow(ScheduleError);
  });

  it('has no next run after it fired', () => {
    expect(nextRunAfter({ kind: 'once', at: '2025-06-01T14:30:00+02:00' }, now, now, 'UTC')).toBeNull();
  });

  it('is refused by the protocol without an offset', () => {
    expect(taskScheduleSchema.safeParse({ kind: 'once', at: '2025-06-01T14:30:00' }).success).toBe(false);
  });
});

describe('interval schedules', () => {
  const now = at('2025-06-01T10:00:00Z');

  it('is first due one interval from now', () => {
    expect(firstRunAt({ kind: 'interval', everyMs: 3_600_000 }, now, 'UTC')).toBe(now + 3_600_000);
  });

  it('keeps its cadence and collapses missed periods into one', () => {
    const hourly = { kind: 'interval', everyMs: 3_600_000 } as const;
    expect(nextRunAfter(hourly, now, now + 5, 'UTC')).toBe(now + 3_600_000);
    // Down for 5.5 hours: the next run is the next step of the original cadence, not 5 catch-up runs.
    expect(nextRunAfter(hourly, now, now + 5.5 * 3_600_000, 'UTC')).toBe(now + 6 * 3_600_000);
    expect(nextRunAfter(hourly, now, now + 6 * 3_600_000, 'UTC')).toBe(now + 7 * 3_600_000);
  });

  it(`refuses intervals under ${MIN_TASK_INTERVAL_MS} ms, here and in the protocol`, () => {
    const e = scheduleError(() =>
      firstRunAt({ kind: 'interval', everyMs: MIN_TASK_INTERVAL_MS - 1 }, now, 'UTC'),
    );
    expect(e.message).toContain('too short');
    expect(firstRunAt({ kind: 'interval', everyMs: MIN_TASK_INTERVAL_MS }, now, 'UTC')).toBe(
      now + MIN_TASK_INTERVAL_MS,
    );
    expect(taskScheduleSchema.safeParse({ kind: 'interval', everyMs: 59_999 }).success).toBe(false);
  });
});
