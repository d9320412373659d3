import { z } from 'zod';
import { wallClockIn } from '../../time/wall-clock.ts';

/** pino's numeric levels, as the owner reads them. */
const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

/** The fields every host log line has; the rest are the line's details. */
const logLine = z.looseObject({
  level: z.number(),
  time: z.number(),
  msg: z.string().optional(),
});

const loggedError = z.looseObject({
  type: z.string().optional(),
  message: z.string().optional(),
  stack: z.string().optional(),
});

/** Said by every line of one process, so only noise when reading: `--json` keeps them. */
const OMITTED = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'v']);

export interface LogFormatOptions {
  /** The IANA zone times are shown in; the machine's own when unset. */
  timeZone?: string;
}

/**
 * Turns one line of the host's pino log into a line for a person: the time in local time, the level, the
 * message, then the details as key=value, with an error's stack indented below. A line that is not a
 * host log line (a crash's stderr in the journal, a torn last line) is returned as it is.
 */
export function createLogFormatter({ timeZone }: LogFormatOptions = {}): (line: string) => string {
  const wallClock = wallClockIn(timeZone);
  const two = (n: number) => String(n).padStart(2, '0');
  const localTime = (epochMs: number): string => {
    const t = wallClock(epochMs);
    return `${t.year}-${two(t.month)}-${two(t.day)} ${two(t.hour)}:${two(t.minute)}:${two(t.second)}.${String(t.millisecond).padStart(3, '0')}`;
  };

  return (line) => {
    const parsed = logLine.safeParse(parseJson(line));
    if (!parsed.success) return line;
    const entry = parsed.data;
    const level = (LEVEL_NAMES[entry.level] ?? `L${entry.level}`).padEnd(5);
    const details: string[] = [];
    let stack: string[] = [];
    for (const [key, value] of Object.entries(entry)) {
      if (OMITTED.has(key) || value === undefined) continue;
      const err = key === 'err' ? loggedError.safeParse(value) : undefined;
      if (err?.success && err.data.message !== undefined) {
        details.push(`err=${quoted(err.data.message)}`);
        // The stack's first line repeats the message.
        stack = (err.data.stack ?? '').split('\n').slice(1);
        continue;
      }
      details.push(`${key}=${quoted(value)}`);
    }
    const head = [localTime(entry.time), level, entry.msg ?? '', ...details].join(' ');
    return [head, ...stack.map((frame) => `    ${frame.trim()}`)].join('\n');
  };
}

function parseJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

/** A bare word stays bare; anything a reader could split wrongly is JSON. */
function quoted(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"'=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}
