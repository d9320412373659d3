import { Cron } from 'croner';
import { MIN_TASK_INTERVAL_MS, type TaskSchedule } from '../../container-agent/src/protocol.ts';
import { errorMessage } from '../errors/error-message.ts';

/** A schedule that cannot be used; the message says what is wrong and how to write it instead. */
export class ScheduleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScheduleError';
  }
}

const CRON_HELP =
  'use five fields "minute hour day-of-month month day-of-week" (e.g. "0 9 * * 1-5" for 09:00 on weekdays) ' +
  'or a nickname such as "@daily"';

function checkTimeZone(timezone: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    throw new ScheduleError(
      `unknown time zone "${timezone}": set [assistant].timezone to an IANA name such as "Europe/Berlin"`,
    );
  }
}

/**
 * A cron pattern bound to the configured IANA zone, so "0 9 * * *" means 09:00 on the owner's wall clock
 * across DST changes, whatever zone the host process or the container runs in. Seconds are refused: five
 * fields already give the one-minute floor every task schedule keeps.
 */
function cronIn(expr: string, timezone: string): Cron {
  const trimmed = expr.trim();
  const fields = trimmed.split(/\s+/);
  if (!trimmed.startsWith('@') && fields.length !== 5) {
    throw new ScheduleError(
      `the cron expression "${expr}" has ${fields.length} field${fields.length === 1 ? '' : 's'}; ${CRON_HELP} ` +
        '(tasks run at most once a minute, so there is no seconds field)',
    );
  }
  checkTimeZone(timezone);
  try {
    // No callback: croner only computes dates and never starts a timer of its own.
    return new Cron(trimmed, { timezone });
  } catch (err) {
    const detail = errorMessage(err).replace(/^CronPattern:\s*/, '');
    throw new ScheduleError(`the cron expression "${expr}" is not valid (${detail}); ${CRON_HELP}`);
  }
}

function cronNext(expr: string, timezone: string, after: number): number | null {
  return cronIn(expr, timezone).nextRun(new Date(after))?.getTime() ?? null;
}

function checkInterval(everyMs: number): void {
  if (!Number.isSafeInteger(everyMs) || everyMs < MIN_TASK_INTERVAL_MS) {
    throw new ScheduleError(
      `an interval of ${everyMs} ms is too short: tasks may repeat at most every ${MIN_TASK_INTERVAL_MS} ms ` +
        `(${MIN_TASK_INTERVAL_MS / 60_000} minute)`,
    );
  }
}

/**
 * When a new (or newly resumed, or rescheduled) task is first due, in epoch ms. Throws a ScheduleError for a
 * schedule that can never fire: a bad cron expression, a one-off time that has passed, a too-short interval.
 */
export function firstRunAt(schedule: TaskSchedule, now: number, timezone: string): number {
  switch (schedule.kind) {
    case 'cron': {
      const next = cronNext(schedule.expr, timezone, now);
      if (next === null) {
        throw new ScheduleError(
          `the cron expression "${schedule.expr}" never matches a future time (e.g. 30 February); ${CRON_HELP}`,
        );
      }
      return next;
    }
    case 'once': {
      const at = Date.parse(schedule.at);
      if (Number.isNaN(at)) {
        throw new ScheduleError(
          `"${schedule.at}" is not a time; give ISO 8601 with an offset, e.g. "2025-06-01T09:00:00+02:00"`,
        );
      }
      if (at <= now) {
        throw new ScheduleError(
          `the time ${schedule.at} is in the past (it is now ${new Date(now).toISOString()}); give a future time ` +
            'with its UTC offset',
        );
      }
      return at;
    }
    case 'interval':
      checkInterval(schedule.everyMs);
      return now + schedule.everyMs;
  }
}

/**
 * When a task that was due at `dueAt` and fired at `now` is due next; null when it is finished (a one-off).
 * Periods missed while the host was down collapse into the one firing that just happened: a cron task's
 * next run is its first match after now, an interval's is the first step of its cadence after now.
 */
export function nextRunAfter(
  schedule: TaskSchedule,
  dueAt: number,
  now: number,
  timezone: string,
): number | null {
  switch (schedule.kind) {
    case 'cron':
      return cronNext(schedule.expr, timezone, Math.max(now, dueAt));
    case 'once':
      return null;
    case 'interval': {
      checkInterval(schedule.everyMs);
      const steps = Math.floor(Math.max(0, now - dueAt) / schedule.everyMs) + 1;
      return dueAt + steps * schedule.everyMs;
    }
  }
}
