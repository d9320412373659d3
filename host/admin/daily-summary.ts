import { Cron } from 'croner';
import { createDayFormatter } from '../gateway/spend/day.ts';
import type { Clock } from '../time/clock.ts';

export interface DailySummaryDeps {
  clock: Clock;
  /** `[admin] daily_summary` ("HH:MM", or undefined: off) and `[assistant] timezone`, read at each arming. */
  settings(): { at: string | undefined; timezone: string };
  /** The day's text (the spend report of today). */
  summary(): string;
  /** To the admin chats; the key is the day's, so a summary is stored once per day whatever re-arms it. */
  notify(key: string, text: string): void;
  onError(err: unknown): void;
}

/** The next "HH:MM" on the owner's wall clock strictly after `after` (DST-aware, via croner). */
export function nextSummaryAt(at: string, timezone: string, after: number): number {
  const [hour, minute] = at.split(':').map(Number);
  // No callback: croner only computes the date; the host's clock owns the timer.
  const next = new Cron(`${minute} ${hour} * * *`, { timezone }).nextRun(new Date(after));
  if (!next) throw new Error(`"${at}" never comes round in ${timezone}`);
  return next.getTime();
}

/**
 * The optional daily summary: at `[admin] daily_summary` in the assistant's time zone, the day's spend goes
 * to the admin chats. One timer on the host's clock, re-armed after each firing and whenever the settings
 * change (`rearm`). A day the host was down at that time gets no summary; a host restarted after it has
 * sent one does not send it again (the day's key).
 */
export function createDailySummary(deps: DailySummaryDeps) {
  let cancel: (() => void) | undefined;
  let stopped = false;

  const fire = (target: number) => {
    cancel = undefined;
    try {
      const { timezone } = deps.settings();
      const day = createDayFormatter(timezone)(target);
      deps.notify(`daily-summary:${day}`, `Daily summary\n${deps.summary()}`);
    } catch (err) {
      deps.onError(err);
    }
    arm(target);
  };

  /** Arms the next summary after `after` (and after now: a fake or late clock never fires twice). */
  const arm = (after = deps.clock.now()) => {
    cancel?.();
    cancel = undefined;
    if (stopped) return;
    try {
      const { at, timezone } = deps.settings();
      if (at === undefined) return;
      const now = deps.clock.now();
      const target = nextSummaryAt(at, timezone, Math.max(after, now));
      cancel = deps.clock.setTimer(() => fire(target), target - now);
    } catch (err) {
      deps.onError(err);
    }
  };

  return {
    start: () => arm(),
    /** The settings may have changed: the next summary is computed again. */
    rearm: () => arm(),
    stop() {
      stopped = true;
      cancel?.();
      cancel = undefined;
    },
  };
}
