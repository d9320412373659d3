import { createSseFramer, parseSseEvent } from './sse.ts';
import { mergeUsage, usageFromPayload, type PartialUsage } from '../spend/usage-extract.ts';

export interface UsageTap {
  /** Returns what to send to the client for this upstream chunk (empty: nothing yet). */
  chunk(data: Buffer): Buffer;
  /** Call once the upstream body ended; returns any held-back tail to send, and the usage seen. */
  finish(): { tail: Buffer; usage: PartialUsage | undefined };
}

export interface UsageTapOptions {
  contentType: string | undefined;
  /**
   * The gateway asked for `stream_options.include_usage` on the client's behalf: drop the usage-only chunk
   * (`choices: []`) the client did not ask for. This holds output back to whole SSE events.
   */
  stripUsageOnlyChunks: boolean;
  /** Largest JSON body buffered for usage parsing; beyond it the body still passes, uncounted. */
  maxJsonBytes: number;
}

const EMPTY = Buffer.alloc(0);
const USAGE_KEY = Buffer.from('"usage"');
const USAGE_HINT = /"usage"\s*:\s*\{/;

const SPACE = new Set([0x20, 0x09, 0x0a, 0x0d, 0x3a]); // whitespace and ':'
const OPEN_BRACE = 0x7b;

/**
 * True when the event holds `"usage"` followed by an object. OpenAI streams with include_usage put
 * `"usage":null` in every chunk, so matching the key alone would decode every token event.
 */
export function mentionsUsageObject(event: Buffer): boolean {
  for (let at = event.indexOf(USAGE_KEY); at >= 0; at = event.indexOf(USAGE_KEY, at + USAGE_KEY.length)) {
    let i = at + USAGE_KEY.length;
    while (i < event.length && SPACE.has(event[i] as number)) i++;
    if (event[i] === OPEN_BRACE) return true;
  }
  return false;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isUsageOnlyChunk(payload: unknown): boolean {
  if (typeof payload !== 'object' || payload === null) return false;
  const record = payload as Record<string, unknown>;
  return (
    Array.isArray(record.choices) &&
    record.choices.length === 0 &&
    typeof record.usage === 'object' &&
    record.usage !== null
  );
}

function sseTap(stripUsageOnlyChunks: boolean): UsageTap {
  let usage: PartialUsage | undefined;
  const out: Buffer[] = [];
  // Events are framed on raw bytes; only the rare event that mentions "usage" is decoded and parsed, so
  // the token stream itself passes at memcpy speed.
  const framer = createSseFramer((event) => {
    let keep = true;
    if (mentionsUsageObject(event)) {
      const { data } = parseSseEvent(event.toString('utf8'));
      if (USAGE_HINT.test(data)) {
        const payload = parseJson(data);
        const found = usageFromPayload(payload);
        if (found) usage = mergeUsage(usage ?? {}, found);
        if (stripUsageOnlyChunks && isUsageOnlyChunk(payload)) keep = false;
      }
    }
    if (stripUsageOnlyChunks && keep) out.push(event);
  });
  const drain = (): Buffer => {
    const ready = out.length === 1 ? out[0]! : Buffer.concat(out);
    out.length = 0;
    return ready;
  };
  return {
    chunk(data) {
      framer.push(data);
      return stripUsageOnlyChunks ? drain() : data;
    },
    finish() {
      framer.end();
      return { tail: drain(), usage };
    },
  };
}

function jsonTap(maxJsonBytes: number): UsageTap {
  const parts: Buffer[] = [];
  let size = 0;
  let overflow = false;
  return {
    chunk(data) {
      if (!overflow) {
        size += data.length;
        if (size > maxJsonBytes) {
          overflow = true;
          parts.length = 0;
        } else parts.push(data);
      }
      return data;
    },
    finish() {
      if (overflow) return { tail: EMPTY, usage: undefined };
      return { tail: EMPTY, usage: usageFromPayload(parseJson(Buffer.concat(parts).toString('utf8'))) };
    },
  };
}

const passThrough: UsageTap = {
  chunk: (data) => data,
  finish: () => ({ tail: EMPTY, usage: undefined }),
};

/** Picks how to watch a response body for usage from its content type. */
export function createUsageTap(options: UsageTapOptions): UsageTap {
  const type = (options.contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'text/event-stream') return sseTap(options.stripUsageOnlyChunks);
  if (type === 'application/json' || type.endsWith('+json')) return jsonTap(options.maxJsonBytes);
  return passThrough;
}
