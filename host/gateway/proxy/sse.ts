export interface SseFramer {
  push(chunk: Buffer): void;
  /** Emits whatever is left as a last (unterminated) event. */
  end(): void;
  /** The start of the event not finished yet (empty between events). */
  pending(): Buffer;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * The one reader of the providers' server-sent events (`text/event-stream`, "\n" or "\r\n" line ends, as
 * OpenAI- and Anthropic-style providers send): the framer cuts the byte stream into whole events, and
 * `parseSseEvent` reads the fields of the few events the gateway needs to look into.
 *
 * Cuts an SSE byte stream into whole events (each ending with its blank line) without decoding it, so
 * the gateway can look at events while passing bytes through at native speed. An event that lies inside
 * one chunk is handed out as a view of that chunk, never copied: only the event a chunk boundary cuts is
 * joined (the held-back start with the chunk's head up to the event's end). Joining whole chunks instead
 * copied every streamed byte and was most of the gateway's CPU on a large stream (see DESIGN.md, "LLM
 * gateway"). An event that grows past `maxEventBytes` without ending is emitted as it is, to bound memory.
 * `onEvent` also gets where in the current chunk the event ends.
 *
 * `nextWanted(chunk, from)` says where, from `from` on, the first byte worth looking at lies (the usage
 * tap: the start of a usage object), or -1 for none: the events wholly before it are only stepped over,
 * not handed out. The event the chunk's start finishes and the one its end starts are handed out as
 * ever, once whole.
 */
export function createSseFramer(
  onEvent: (event: Buffer, end: number) => void,
  maxEventBytes = 16 * 1024 * 1024,
  nextWanted?: (chunk: Buffer, from: number) => number,
): SseFramer {
  let pending: Buffer = EMPTY;

  return {
    push(chunk) {
      if (chunk.length === 0) return;
      let start = 0;
      if (pending.length > 0) {
        // The event held back ends either on a blank line whose first LF is among pending's last bytes,
        // or somewhere in this chunk.
        const end = junctionEnd(pending, chunk);
        if (end === -1) {
          pending = Buffer.concat([pending, chunk]);
          if (pending.length > maxEventBytes) {
            onEvent(pending, chunk.length);
            pending = EMPTY;
          }
          return;
        }
        onEvent(Buffer.concat([pending, chunk.subarray(0, end)]), end);
        pending = EMPTY;
        start = end;
      }
      let wanted = nextWanted === undefined ? start : nextWanted(chunk, start);
      for (let end = boundary(chunk, start); end !== -1; end = boundary(chunk, start)) {
        if (wanted !== -1 && end > wanted) {
          onEvent(chunk.subarray(start, end), end);
          if (nextWanted !== undefined) wanted = nextWanted(chunk, end);
          else wanted = end;
        }
        start = end;
      }
      const rest = chunk.subarray(start);
      if (rest.length > maxEventBytes) onEvent(rest, chunk.length);
      // A view, not a copy: it pins the chunk (one socket read) until the event ends, but copying every
      // event a chunk boundary cuts was, with the join below, most of a large stream's garbage.
      else if (rest.length > 0) pending = rest;
    },
    end() {
      if (pending.length > 0) onEvent(pending, 0);
      pending = EMPTY;
    },
    pending: () => pending,
  };
}

const EMPTY = Buffer.alloc(0);

/** Index just past the blank line that ends an event, searching for its first LF from `from`; or -1. */
function boundary(buf: Buffer, from: number): number {
  let index = buf.indexOf(LF, from);
  while (index !== -1) {
    const next = buf[index + 1];
    if (next === LF) return index + 2;
    if (next === CR && buf[index + 2] === LF) return index + 3;
    // A CR or LF at the very end may be the start of a blank line still to come.
    if (next === undefined || (next === CR && index + 2 >= buf.length)) return -1;
    index = buf.indexOf(LF, index + 1);
  }
  return -1;
}

/**
 * Where, in `chunk`, the event `pending` started ends: just past the first blank line of pending + chunk
 * (pending holds none of its own, or it would have been emitted); -1 when chunk does not finish it. Only
 * pending's last two bytes can start that blank line, so nothing is joined to find it.
 */
function junctionEnd(pending: Buffer, chunk: Buffer): number {
  const tail = Math.min(2, pending.length);
  // Called once per chunk: a plain loop, no closure (one built per call showed up in the profile).
  for (let i = 0; i < tail; i++) {
    if (byteAt(pending, chunk, tail, i) !== LF) continue;
    const next = byteAt(pending, chunk, tail, i + 1);
    if (next === LF) return i + 2 - tail;
    if (next === CR && byteAt(pending, chunk, tail, i + 2) === LF) return i + 3 - tail;
  }
  return boundary(chunk, 0);
}

/** Byte `i` of pending's last `tail` bytes followed by chunk. */
function byteAt(pending: Buffer, chunk: Buffer, tail: number, i: number): number | undefined {
  return i < tail ? pending[pending.length - tail + i] : chunk[i - tail];
}

export interface SseEvent {
  /** The `event:` field, if any. */
  event: string | undefined;
  /** The `data:` lines joined with "\n"; empty for comment-only events. */
  data: string;
  /** The exact text of the event including its terminating blank line, so it can be re-emitted unchanged. */
  raw: string;
}

/** The fields of one event as the framer cut it (a last one may lack its blank line). */
export function parseSseEvent(raw: string): SseEvent {
  let event: string | undefined;
  const data: string[] = [];
  for (const lineWithCr of raw.split('\n')) {
    const line = lineWithCr.endsWith('\r') ? lineWithCr.slice(0, -1) : lineWithCr;
    if (line.length === 0 || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
  }
  return { event, data: data.join('\n'), raw };
}
