/**
 * Formats instants in the group's time zone. Containers run in UTC; the model must see the group's
 * local time and offset, or schedules it writes fire hours early or late.
 */

export interface ZonedTime {
  /** e.g. "2025-03-01 11:00:05" */
  local: string;
  /** e.g. "Saturday" */
  weekday: string;
  /** e.g. "+01:00" */
  offset: string;
  /** The zone actually used (UTC when the requested one is unknown). */
  zone: string;
}

const FORMAT: Intl.DateTimeFormatOptions = {
  hourCycle: 'h23',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  weekday: 'long',
  timeZoneName: 'longOffset',
};

export function zonedTime(date: Date, zone: string): ZonedTime {
  // One formatter, not a probe for the zone and then the formatter: making one is most of the cost, and
  // this runs on the way to a run's first LLM request.
  let timeZone = zone;
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-US', { ...FORMAT, timeZone });
  } catch {
    timeZone = 'UTC';
    format = new Intl.DateTimeFormat('en-US', { ...FORMAT, timeZone });
  }
  const parts = format.formatToParts(date);
  const get = (type: Intl.DateTimeFormatPartTypes): string => parts.find((p) => p.type === type)?.value ?? '';
  const zoneName = get('timeZoneName'); // "GMT+01:00", or "GMT" at offset zero
  const offset = zoneName === 'GMT' || zoneName === '' ? '+00:00' : zoneName.replace(/^GMT/, '');
  return {
    local: `${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}:${get('second')}`,
    weekday: get('weekday'),
    offset,
    zone: timeZone,
  };
}
