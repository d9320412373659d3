export interface SseEvent {
  /** The `event:` field, if any. */
  event: string | undefined;
  /** The `data:` lines joined with "\n"; empty for comment-only blocks. */
  data: string;
  /** The exact text of the block including its terminating blank line, so it can be re-emitted unchanged. */
  raw: string;
}

export interface SseSplitter {
  push(text: string): void;
  /** Flushes a final block that lacked its blank line. */
  end(): void;
}

/**
 * Incremental server-sent-events splitter for "\n" and "\r\n" line endings (what OpenAI- and
 * Anthropic-style providers send). Input may be cut anywhere; events come out whole.
 */
export function createSseSplitter(onEvent: (event: SseEvent) => void): SseSplitter {
  let pending = '';
  let raw = '';
  let event: string | undefined;
  let dataLines: string[] = [];

  const dispatch = () => {
    if (raw.length > 0) onEvent({ event, data: dataLines.join('\n'), raw });
    raw = '';
    event = undefined;
    dataLines = [];
  };

  const handleLine = (lineWithCr: string, terminator: string) => {
    raw += lineWithCr + terminator;
    const line = lineWithCr.endsWith('\r') ? lineWithCr.slice(0, -1) : lineWithCr;
    if (line.length === 0) {
      dispatch();
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') dataLines.push(value);
    else if (field === 'event') event = value;
  };

  return {
    push(text) {
      // Resume the newline search where the previous push stopped, so one long line stays linear.
      let searchFrom = pending.length;
      pending += text;
      let start = 0;
      for (;;) {
        const newline = pending.indexOf('\n', Math.max(start, searchFrom));
        if (newline === -1) break;
        searchFrom = 0;
        handleLine(pending.slice(start, newline), '\n');
        start = newline + 1;
      }
      pending = start === 0 ? pending : pending.slice(start);
    },
    end() {
      if (pending.length > 0) handleLine(pending, '');
      pending = '';
      dispatch();
    },
  };
}
