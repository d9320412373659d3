export interface SseFramer {
  push(chunk: Buffer): void;
  /** Emits whatever is left as a last (unterminated) event. */
  end(): void;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * The one reader of the providers' server-sent events (`text/event-stream`, "\n" or "\r\n" line ends, as
 * OpenAI- and Anthropic-style providers send): the framer cuts the byte stream into whole events, and
 * `parseSseEvent` reads the fields of the few events the gateway needs to look into.
 *
 * Cuts an SSE byte stream into whole events (each ending with its blank line) without decoding it, so
 * the gateway can look at events while passing bytes through at native speed. An event that grows past
 * `maxEventBytes` without ending is emitted as it is, to bound memory.
 */
export function createSseFramer(
  onEvent: (event: Buffer) => void,
  maxEventBytes = 16 * 1024 * 1024,
): SseFramer {
  let pending: Buffer = Buffer.alloc(0);

  /** Index just past the blank line that ends an event starting at or before `from`, or -1. */
  const boundary = (buf: Buffer, from: number): number => {
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
  };

  return {
    push(chunk) {
      // Rescan a couple of bytes before the join so a "\n" + "\n" split across chunks is found.
      const rescanFrom = Math.max(0, pending.length - 2);
      let buf = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      let from = rescanFrom;
      let start = 0;
      for (;;) {
        const end = boundary(buf, Math.max(start, from));
        if (end === -1) break;
        onEvent(buf.subarray(start, end));
        start = end;
        from = end;
      }
      buf = buf.subarray(start);
      if (buf.length > maxEventBytes) {
        onEvent(buf);
        buf = Buffer.alloc(0);
      }
      pending = buf;
    },
    end() {
      if (pending.length > 0) onEvent(pending);
      pending = Buffer.alloc(0);
    },
  };
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
