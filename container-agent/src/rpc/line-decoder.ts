/**
 * Splits a byte stream into newline-terminated frames without ever holding more than `maxFrameBytes`
 * of one line: a longer line is dropped as it streams in, skipped up to its newline and reported, and
 * the lines after it are decoded normally.
 */

export interface OversizeReport {
  /** Bytes of the dropped line (without its newline). */
  bytes: number;
  /** The line's first bytes (at most PREFIX_BYTES), for finding the request id it carried. */
  prefix: string;
}

export interface LineDecoderOptions {
  maxFrameBytes: number;
  /** A complete line, UTF-8 decoded, without its line ending. Blank lines are not reported. */
  onFrame: (line: string) => void;
  onOversize: (report: OversizeReport) => void;
}

export interface LineDecoder {
  push(chunk: Buffer | string): void;
  /** The stream ended: a last line without a newline still counts as a frame. */
  end(): void;
  /**
   * Nothing more is decoded, not even the rest of the chunk being pushed: a flood of lines in one chunk
   * stops costing anything the moment its reader gives up on it.
   */
  halt(): void;
}

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
export const PREFIX_BYTES = 256;

export function createLineDecoder(options: LineDecoderOptions): LineDecoder {
  const { maxFrameBytes, onFrame, onOversize } = options;
  let parts: Buffer[] = [];
  let size = 0;
  // While skipping an oversized line: how many bytes it had so far and how it began.
  let skipping = false;
  let skippedBytes = 0;
  let skippedPrefix = '';
  let halted = false;

  const startSkipping = (segment: Buffer): void => {
    const head = Buffer.concat([...parts, segment.subarray(0, PREFIX_BYTES)]).subarray(0, PREFIX_BYTES);
    skipping = true;
    skippedBytes = size + segment.length;
    skippedPrefix = head.toString('utf8');
    parts = [];
    size = 0;
  };

  const finishLine = (): void => {
    if (skipping) {
      const report = { bytes: skippedBytes, prefix: skippedPrefix };
      skipping = false;
      skippedBytes = 0;
      skippedPrefix = '';
      onOversize(report);
      return;
    }
    let line = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size);
    parts = [];
    size = 0;
    if (line.length > 0 && line[line.length - 1] === CARRIAGE_RETURN)
      line = line.subarray(0, line.length - 1);
    const text = line.toString('utf8');
    if (text.trim() !== '') onFrame(text);
  };

  return {
    push(chunk) {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
      let start = 0;
      while (start <= buf.length && !halted) {
        const newline = buf.indexOf(NEWLINE, start);
        const end = newline === -1 ? buf.length : newline;
        const segment = buf.subarray(start, end);
        if (skipping) {
          skippedBytes += segment.length;
        } else if (size + segment.length > maxFrameBytes) {
          startSkipping(segment);
        } else if (segment.length > 0) {
          parts.push(segment);
          size += segment.length;
        }
        if (newline === -1) return;
        finishLine();
        start = newline + 1;
      }
    },
    end() {
      if (!halted && (skipping || size > 0)) finishLine();
    },
    halt() {
      halted = true;
      parts = [];
      size = 0;
    },
  };
}
