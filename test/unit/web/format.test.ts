import { describe, expect, it } from 'vitest';
import {
  costHtml,
  createConsoleFormat,
  exactCost,
  formatCost,
  formatDuration,
  formatRelative,
  wallTimeToUtc,
} from '../../../host/web/format.ts';

const NOW = Date.parse('2026-11-27T08:00:00Z');

describe('console times', () => {
  const berlin = createConsoleFormat({ timeZone: 'Europe/Berlin', now: () => NOW });

  it('shows a time of today as the clock in [assistant] timezone, an older one with its day, and a last year’s with its year', () => {
    expect(berlin.clock('2026-11-27T07:57:00.000Z')).toBe('08:57:00');
    expect(berlin.clock(Date.parse('2026-11-26T22:30:00Z'))).toBe('26 Nov, 23:30');
    expect(berlin.clock('2025-07-01T12:00:00Z')).toBe('1 Jul 2025, 14:00'); // summer time: UTC+2
    // The day is the owner's, not UTC's: 23:30 UTC on the 26th is already the 27th in Tokyo.
    const tokyo = createConsoleFormat({ timeZone: 'Asia/Tokyo', now: () => NOW });
    expect(tokyo.clock('2026-11-26T23:30:00Z')).toBe('08:30:00');
  });

  it('marks up a time with its UTC instant in datetime and title, and how long ago it was', () => {
    expect(String(berlin.at('2026-11-27T07:57:00.000Z'))).toBe(
      '<time datetime="2026-11-27T07:57:00.000Z" title="2026-11-27 07:57:00 UTC">08:57:00 <span class="ago">3 min ago</span></time>',
    );
    expect(String(berlin.at(null))).toBe('');
    expect(String(berlin.at('not a time'))).toBe('not a time');
  });

  it('says how long ago or how far ahead in the largest unit that fits', () => {
    expect(formatRelative(NOW - 3 * 60_000 - 59_000, NOW)).toBe('3 min ago');
    expect(formatRelative(NOW - 40_000, NOW)).toBe('40 sec ago');
    expect(formatRelative(NOW - 200, NOW)).toBe('now');
    expect(formatRelative(NOW + 2 * 3_600_000, NOW)).toBe('in 2 hr');
    expect(formatRelative(NOW - 86_400_000, NOW)).toBe('yesterday');
    expect(formatRelative(NOW - 3 * 86_400_000, NOW)).toBe('3 days ago');
  });

  it('writes durations in the unit that reads best', () => {
    expect(formatDuration(340)).toBe('340 ms');
    expect(formatDuration(2_449)).toBe('2.4 s');
    expect(formatDuration(42_900)).toBe('42 s');
    expect(formatDuration(3 * 60_000 + 20_000)).toBe('3 min');
    expect(formatDuration(65 * 60_000)).toBe('1 h 5 min');
    expect(formatDuration(2 * 3_600_000)).toBe('2 h');
    expect(formatDuration(51 * 3_600_000)).toBe('2 d 3 h');
    expect(formatDuration(-1)).toBe('');
  });
});

describe('console costs', () => {
  it('shows four decimals from a hundredth of a cent up, and every digit below, so a cheap run is never $0.0000', () => {
    expect(formatCost(4321)).toBe('$0.0043');
    expect(formatCost(5_000_000)).toBe('$5.0000');
    expect(formatCost(12_345_678)).toBe('$12.3457');
    expect(formatCost(999_951)).toBe('$1.0000');
    expect(formatCost(42)).toBe('$0.000042');
    expect(formatCost(1)).toBe('$0.000001');
    expect(formatCost(0)).toBe('$0');
    expect(formatCost(-42)).toBe('-$0.000042');
  });

  it('keeps the exact amount in the title', () => {
    expect(exactCost(4321)).toBe('$0.004321 (4321 micro-dollars)');
    expect(String(costHtml(4321))).toBe(
      '<span class="cost" title="$0.004321 (4321 micro-dollars)">$0.0043</span>',
    );
  });
});

describe('times the owner types', () => {
  it('reads a wall-clock time in [assistant] timezone as the UTC instant the store keeps', () => {
    expect(wallTimeToUtc('2026-11-27T09:00', 'Europe/Berlin')).toBe('2026-11-27T08:00:00.000Z');
    expect(wallTimeToUtc('2026-11-27', 'Europe/Berlin')).toBe('2026-11-26T23:00:00.000Z');
    expect(wallTimeToUtc('2026-07-01 09:00:30', 'Europe/Berlin')).toBe('2026-07-01T07:00:30.000Z');
    expect(wallTimeToUtc('2026-11-27T09:00Z', 'Europe/Berlin')).toBe('2026-11-27T09:00:00.000Z');
    expect(wallTimeToUtc('2026-11-27T09:00', 'America/New_York')).toBe('2026-11-27T14:00:00.000Z');
    // The hour the clocks skip reads as after the change; the hour they repeat, as its first reading.
    expect(wallTimeToUtc('2026-03-29T02:30', 'Europe/Berlin')).toBe('2026-03-29T01:30:00.000Z');
    expect(wallTimeToUtc('2026-10-25T02:30', 'Europe/Berlin')).toBe('2026-10-25T00:30:00.000Z');
    expect(wallTimeToUtc('yesterday', 'Europe/Berlin')).toBeUndefined();
    expect(wallTimeToUtc('2026-11-27T9', 'UTC')).toBeUndefined();
  });
});
