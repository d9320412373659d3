import { createSseFramer, parseSseEvent } from './sse.ts';
import { mergeUsage, usageFromPayload, type PartialUsage } from '../spend/usage-extract.ts';

export interface UsageTap {
  /** Returns what to send to the client for this upstream chunk, in order (none: nothing yet). */
  chunk(data: Buffer): readonly Buffer[];
  /** Call once the upstream body ended; returns any held-back tail to send, and the usage seen. */
  finish(): { tail: readonly Buffer[]; usage: PartialUsage | undefined };
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

const NO_BYTES = Buffer.alloc(0);
const USAGE_HINT = /"usage"\s*:\s*\{/;

const SPACE = new Set([0x20, 0x09, 0x0a, 0x0d, 0x3a]); // whitespace and ':'
const OPEN_BRACE = 0x7b;
const QUOTE = 0x22;
/** `"usage"`, and where its one `g` is: the key is found by that byte. */
const USAGE_KEY = Buffer.from('"usage"');
const USAGE_G = 4;

/** Whether the bytes at `at` spell `"usage"`. */
function usageKeyAt(event: Buffer, at: number): boolean {
  for (let i = 0; i < USAGE_KEY.length; i++) if (event[at + i] !== USAGE_KEY[i]) return false;
  return true;
}

/**
 * True when the event holds `"usage"` followed by an object. OpenAI streams with include_usage put
 * `"usage":null` in every chunk, so matching the key alone would decode every token event. The key is
 * looked for by its `g`, a single byte (a memchr), not by the seven-byte needle: Buffer.indexOf with a
 * Buffer needle cost ten times as much per call, and it ran twice per event of every stream.
 */
export function mentionsUsageObject(event: Buffer): boolean {
  return usageObjectAt(event, 0) !== -1;
}

/** Where the first `"usage"` followed by an object starts in `bytes` from `from` on, or -1. */
export function usageObjectAt(bytes: Buffer, from: number): number {
  for (let g = bytes.indexOf(0x67, from + USAGE_G); g >= 0; g = bytes.indexOf(0x67, g + 1)) {
    const at = g - USAGE_G;
    if (bytes[at] !== QUOTE || !usageKeyAt(bytes, at)) continue;
    let i = at + USAGE_KEY.length;
    while (i < bytes.length && SPACE.has(bytes[i] as number)) i++;
    if (bytes[i] === OPEN_BRACE) return at;
  }
  return -1;
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

const CHOICES_KEY = Buffer.from('"choices"');
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACKET = 0x5b;

/**
 * True when the start of an event already shows a non-empty `"choices"` array, so the event cannot be the
 * usage-only chunk and may go out before its end arrives. A false "no" only holds an event back until it
 * ends; a false "yes" (a nested key of that name) only lets a usage-only chunk through unstripped.
 */
export function showsChoices(eventStart: Buffer): boolean {
  const at = eventStart.indexOf(CHOICES_KEY);
  if (at < 0) return false;
  let i = at + CHOICES_KEY.length;
  while (i < eventStart.length && SPACE.has(eventStart[i] as number)) i++;
  if (eventStart[i] !== OPEN_BRACKET) return false;
  i++;
  while (i < eventStart.length && SPACE.has(eventStart[i] as number)) i++;
  return i < eventStart.length && eventStart[i] !== CLOSE_BRACKET;
}

/**
 * Appends a piece to what goes out, as one view with the previous piece when both are adjacent views of
 * the same chunk: a chunk whose bytes all pass goes out as itself, without a copy.
 */
function appendPiece(out: Buffer[], piece: Buffer): void {
  if (piece.length === 0) return;
  const last = out[out.length - 1];
  if (
    last !== undefined &&
    last.buffer === piece.buffer &&
    last.byteOffset + last.length === piece.byteOffset
  )
    out[out.length - 1] = Buffer.from(last.buffer, last.byteOffset, last.length + piece.length);
  else out.push(piece);
}

/**
 * Watches an SSE stream for usage. When asked to strip the usage-only chunk, output is still cut by
 * upstream chunk, not by event: the bytes of each chunk go out as they came (one view, no copy) except
 * a dropped event's, and except the unfinished event at the chunk's end while it could still be the
 * usage-only chunk (held back until showsChoices() or its end decides). Re-assembling output event by
 * event copied every byte and held every chunk's tail back, which cost more CPU than the rest of the
 * gateway's work on a large stream (DESIGN.md, "LLM gateway").
 */
function sseTap(stripUsageOnlyChunks: boolean): UsageTap {
  let usage: PartialUsage | undefined;
  let out: Buffer[] = [];
  // The unfinished event at the end of the previous chunk: held back (copies) or already sent.
  let held: Buffer[] = [];
  let startSent = false;
  // The current chunk, while the framer hands out its events.
  let chunk: Buffer = NO_BYTES;
  let carried = 0;

  const keepEvent = (event: Buffer): boolean => {
    if (!mentionsUsageObject(event)) return true;
    const { data } = parseSseEvent(event.toString('utf8'));
    if (!USAGE_HINT.test(data)) return true;
    const payload = parseJson(data);
    const found = usageFromPayload(payload);
    if (found) usage = mergeUsage(usage ?? {}, found);
    return !(stripUsageOnlyChunks && isUsageOnlyChunk(payload));
  };

  // Kept events are not copied one by one: the chunk goes out in runs between dropped events.
  let runStart = 0;
  const onEvent = (event: Buffer, end: number): void => {
    const keep = keepEvent(event);
    if (!stripUsageOnlyChunks) return;
    if (carried > 0) {
      // An event whose start already went out must go out whole (showsChoices() said it is not usage-only).
      if (keep && !startSent) for (const part of held) appendPiece(out, part);
      else if (!keep && !startSent) runStart = end;
      held = [];
      startSent = false;
      carried = 0;
    } else if (!keep) {
      appendPiece(out, chunk.subarray(runStart, end - event.length));
      runStart = end;
    }
  };
  // Events without a usage object pass as they came, so the framer hands out only those with one: one
  // scan of the chunk for the key instead of a view, a call and a scan per event.
  const framer = createSseFramer(onEvent, undefined, usageObjectAt);

  const drain = (): Buffer[] => {
    const ready = out;
    out = [];
    return ready;
  };
  return {
    chunk(data) {
      if (!stripUsageOnlyChunks) {
        framer.push(data);
        return [data];
      }
      chunk = data;
      runStart = 0;
      carried = framer.pending().length;
      framer.push(data);
      // What the framer holds now is the chunk's unfinished end, or all of it joined to what came before.
      const pos = data.length - Math.min(data.length, framer.pending().length);
      appendPiece(out, data.subarray(runStart, pos));
      const rest = data.subarray(pos);
      if (rest.length > 0) {
        if (startSent) appendPiece(out, rest);
        else if (showsChoices(framer.pending())) {
          for (const part of held) appendPiece(out, part);
          appendPiece(out, rest);
          held = [];
          startSent = true;
        } else held.push(Buffer.from(rest));
      }
      chunk = NO_BYTES;
      return drain();
    },
    finish() {
      chunk = NO_BYTES;
      carried = framer.pending().length;
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
      return [data];
    },
    finish() {
      if (overflow) return { tail: [], usage: undefined };
      return { tail: [], usage: usageFromPayload(parseJson(Buffer.concat(parts).toString('utf8'))) };
    },
  };
}

const passThrough: UsageTap = {
  chunk: (data) => [data],
  finish: () => ({ tail: [], usage: undefined }),
};

/** Picks how to watch a response body for usage from its content type. */
export function createUsageTap(options: UsageTapOptions): UsageTap {
  const type = (options.contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'text/event-stream') return sseTap(options.stripUsageOnlyChunks);
  if (type === 'application/json' || type.endsWith('+json')) return jsonTap(options.maxJsonBytes);
  return passThrough;
}
