import { wallClockIn } from '../time/wall-clock.ts';
import { h, type Html } from './html.ts';

/**
 * How the console writes times, durations and money for the owner: clock times in `[assistant] timezone`
 * with how long ago they were, durations in the unit that reads best, costs to the micro-dollar when a
 * cent's hundredth would show nothing. Intl does the calendar work (time zones, plural rules); the rest is
 * a few lines of arithmetic. The exact value stays in the markup (`datetime`, `title`) for whoever needs it.
 */

export interface ConsoleFormat {
  timeZone: string;
  /** "09:14:05" today, "26 Nov, 09:14" this year, "26 Nov 2025, 09:14" before; the raw text if unparsable. */
  clock(instant: Instant): string;
  /** "3 min ago", "in 2 hr", "yesterday"; '' when unparsable. */
  ago(instant: Instant): string;
  /** A `<time>` with the local clock and how long ago; its `datetime` and `title` carry the UTC instant. */
  at(instant: Instant | null | undefined): Html;
}

/** An instant as the store keeps it: epoch milliseconds or an ISO 8601 string. */
export type Instant = number | string;

export function createConsoleFormat(deps: { timeZone: string; now(): number }): ConsoleFormat {
  const { timeZone } = deps;
  const day = new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  });
  const time = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  });
  const date = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    day: 'numeric',
    month: 'short',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  });
  const dateYear = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  });
  const clock = (instant: Instant): string => {
    const ms = toMs(instant);
    if (ms === undefined) return String(instant);
    const then = day.format(ms);
    const today = day.format(deps.now());
    if (then === today) return time.format(ms);
    return then.slice(0, 4) === today.slice(0, 4) ? date.format(ms) : dateYear.format(ms);
  };
  const ago = (instant: Instant): string => {
    const ms = toMs(instant);
    return ms === undefined ? '' : formatRelative(ms, deps.now());
  };
  return {
    timeZone,
    clock,
    ago,
    at(instant) {
      if (instant === null || instant === undefined || instant === '') return h``;
      const ms = toMs(instant);
      if (ms === undefined) return h`${String(instant)}`;
      const iso = new Date(ms).toISOString();
      return h`<time datetime="${iso}" title="${iso.replace('T', ' ').slice(0, 19)} UTC">${clock(ms)} <span class="ago">${ago(ms)}</span></time>`;
    },
  };
}

function toMs(instant: Instant): number | undefined {
  const ms = typeof instant === 'number' ? instant : Date.parse(instant);
  return Number.isFinite(ms) ? ms : undefined;
}

const RELATIVE = new Intl.RelativeTimeFormat('en', { numeric: 'auto', style: 'short' });
const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 86_400_000],
  ['month', 30 * 86_400_000],
  ['week', 7 * 86_400_000],
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
];

/** "3 min ago", "in 2 hr", "yesterday", "now": the largest unit that fits, rounded towards zero. */
export function formatRelative(thenMs: number, nowMs: number): string {
  const diff = thenMs - nowMs;
  const abs = Math.abs(diff);
  const [unit, size] = UNITS.find(([, size]) => abs >= size) ?? ['second', 1000];
  const n = Math.trunc(abs / size) * Math.sign(diff);
  // English short style abbreviates with a period ("3 min. ago"); the console reads better without it.
  return RELATIVE.format(n === 0 ? 0 : n, unit).replace(/\.(?= |$)/g, '');
}

/** "340 ms", "2.4 s", "42 s", "3 min", "1 h 5 min", "2 d 3 h". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 10) return `${(Math.floor(s * 10) / 10).toFixed(1)} s`;
  if (s < 60) return `${Math.floor(s)} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const hours = Math.floor(min / 60);
  if (hours < 24) return min % 60 ? `${hours} h ${min % 60} min` : `${hours} h`;
  const days = Math.floor(hours / 24);
  return hours % 24 ? `${days} d ${hours % 24} h` : `${days} d`;
}

/**
 * Dollars from integer micro-dollars: four decimals from a hundredth of a cent up ("$0.0043", "$12.5000"),
 * and below that every digit ("$0.000042"), so a cheap run never reads as "$0.0000".
 */
export function formatCost(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.round(Math.abs(micros));
  if (abs === 0) return '$0';
  if (abs < 100) return `${sign}$0.${String(abs).padStart(6, '0')}`;
  const tenThousandths = Math.round(abs / 100);
  return `${sign}$${Math.floor(tenThousandths / 10_000)}.${String(tenThousandths % 10_000).padStart(4, '0')}`;
}

/** The exact amount, for a title: "$0.004321 (4321 micro-dollars)". */
export function exactCost(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.round(Math.abs(micros));
  return `${sign}$${Math.floor(abs / 1_000_000)}.${String(abs % 1_000_000).padStart(6, '0')} (${micros} micro-dollars)`;
}

/** A cost with its exact amount on hover. */
export const costHtml = (micros: number): Html =>
  h`<span class="cost" title="${exactCost(micros)}">${formatCost(micros)}</span>`;

/**
 * A wall-clock time the owner typed ("2026-11-27", "2026-11-27T09:00", "…T09:00:30") in `timeZone`, as
 * the UTC ISO instant the store keeps; one ending in "Z" is already UTC. Undefined when it is no such time.
 * Across a clock change the earlier of two readings is taken, and a skipped hour reads as after the change.
 */
export function wallTimeToUtc(text: string, timeZone: string): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?(Z)?$/.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, hh = '0', mi = '0', ss = '0', z] = m;
  const wall = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(hh), Number(mi), Number(ss));
  if (!Number.isFinite(wall)) return undefined;
  if (z) return new Date(wall).toISOString();
  // The zone's offset a day before and a day after: a wall time matches one reading, two (the repeated hour
  // of autumn) or none (the skipped hour of spring, read with the offset before the change: after it).
  const wallClock = wallClockIn(timeZone);
  const offset = (ms: number) => {
    const p = wallClock(ms);
    return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second, p.millisecond) - ms;
  };
  const before = wall - offset(wall - 86_400_000);
  const after = wall - offset(wall + 86_400_000);
  const readings = [before, after].filter((ms) => ms + offset(ms) === wall);
  return new Date(readings.length > 0 ? Math.min(...readings) : before).toISOString();
}
