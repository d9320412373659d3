/**
 * Returns a function mapping an epoch-millisecond instant to its calendar day ("YYYY-MM-DD") in the given
 * IANA time zone. Spend caps reset at the owner's midnight, not UTC's. Throws at creation for an unknown zone.
 */
export function createDayFormatter(timezone: string): (epochMs: number) => string {
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-CA', {
      timeZone: timezone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    });
  } catch {
    throw new Error(
      `unknown time zone "${timezone}": set [assistant].timezone to an IANA name such as "Europe/Berlin"`,
    );
  }
  // Every request names its day: the answer is kept for the minute it was asked for, since a zone's
  // midnight falls on a whole minute (offsets are whole minutes since 1972). Formatting each time was a
  // visible share of the gateway's CPU per small request (DESIGN.md, "LLM gateway").
  let minute = Number.NaN;
  let day = '';
  return (epochMs: number) => {
    const asked = Math.floor(epochMs / 60_000);
    if (asked === minute) return day;
    const parts = format.formatToParts(new Date(epochMs));
    const get = (type: string) => parts.find((part) => part.type === type)?.value ?? '';
    minute = asked;
    day = `${get('year')}-${get('month')}-${get('day')}`;
    return day;
  };
}

/**
 * A day formatter for a zone read at each call (a reloaded `[assistant].timezone`); the formatter is
 * rebuilt only when the zone changed.
 */
export function createLiveDayFormatter(timezone: () => string): (epochMs: number) => string {
  let zone = timezone();
  let format = createDayFormatter(zone);
  return (epochMs) => {
    const now = timezone();
    if (now !== zone) {
      format = createDayFormatter(now);
      zone = now;
    }
    return format(epochMs);
  };
}
