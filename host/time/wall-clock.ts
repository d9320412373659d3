/** What a wall clock in one zone shows at an instant, as numbers. */
export interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
}

/**
 * The wall clock of `timeZone` (the machine's own when undefined), read through one Intl formatter made
 * once: callers that read many instants (a log, a page of rows) pay for the zone's rules only once.
 */
export function wallClockIn(timeZone: string | undefined): (epochMs: number) => WallClock {
  const format = new Intl.DateTimeFormat('en-US', {
    ...(timeZone === undefined ? {} : { timeZone }),
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    fractionalSecondDigits: 3,
  });
  return (epochMs) => {
    const parts: Partial<Record<Intl.DateTimeFormatPartTypes, number>> = {};
    for (const part of format.formatToParts(epochMs)) parts[part.type] = Number(part.value);
    return {
      year: parts.year ?? 0,
      month: parts.month ?? 1,
      day: parts.day ?? 1,
      hour: parts.hour ?? 0,
      minute: parts.minute ?? 0,
      second: parts.second ?? 0,
      millisecond: parts.fractionalSecond ?? 0,
    };
  };
}
