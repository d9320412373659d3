/**
 * Base64 (standard and URL-safe) and hex runs that decode to text, so the scanner can look inside them:
 * a token or a `.env` file base64-encoded by a leaking agent reads as noise otherwise. Bounded by
 * construction, because the text is written by the party being checked: a run is first judged on its
 * first `HEAD_CHARS` (binary data such as an image stops there), decoded text is at most 3/4 of the run
 * it came from, so each level of nesting scans less than the one before, and the scanner stops at a fixed
 * depth (where it reports text blobs it did not open instead of passing them unread).
 */

const MIN_BASE64_CHARS = 16;
const MIN_HEX_CHARS = 32;
const HEAD_CHARS = 4096;

export interface DecodedBlob {
  start: number;
  end: number;
  encoding: 'base64' | 'hex';
  text: string;
}

/** base64 and base64url: A-Z a-z 0-9 + / - _ (padding is handled apart). */
function isBase64Char(c: number): boolean {
  return (
    (c >= 0x41 && c <= 0x5a) ||
    (c >= 0x61 && c <= 0x7a) ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x2b ||
    c === 0x2f ||
    c === 0x2d ||
    c === 0x5f
  );
}

function isHexChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}

interface Run {
  start: number;
  end: number;
  hex: boolean;
}

/**
 * Maximal runs of base64 characters (with their `=` padding) of at least `MIN_BASE64_CHARS`, in one
 * pass over the text: a hand-written loop, because a character-class regex over 100 KiB costs V8 several
 * milliseconds. A run of hex digits only (after an optional `0x`) is marked as hex.
 */
function runs(text: string): Run[] {
  const out: Run[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    if (!isBase64Char(text.charCodeAt(i))) {
      i++;
      continue;
    }
    let start = i;
    let hex = true;
    while (i < n && isBase64Char(text.charCodeAt(i))) {
      if (hex && !isHexChar(text.charCodeAt(i))) hex = false;
      i++;
    }
    let end = i;
    while (end < n && end - i < 2 && text.charCodeAt(end) === 0x3d) end++;
    if (!hex && text.charCodeAt(start) === 0x30 && (text.charCodeAt(start + 1) | 0x20) === 0x78) {
      // `0x` before hex digits: the digits are the run.
      let j = start + 2;
      while (j < i && isHexChar(text.charCodeAt(j))) j++;
      if (j === i) {
        start += 2;
        hex = true;
      }
    }
    if (end - start >= MIN_BASE64_CHARS) out.push({ start, end: hex ? i : end, hex });
    i = end;
  }
  return out;
}

/** Decoded bytes that read as text: valid UTF-8, almost all printable. Random bytes almost never do. */
function asText(bytes: Buffer): string | undefined {
  if (bytes.length < 8) return undefined;
  const text = bytes.toString('utf8');
  if (text.includes('\uFFFD')) return undefined;
  let printable = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c >= 0x20 && c !== 0x7f) || c === 0x09 || c === 0x0a || c === 0x0d) printable++;
  }
  return printable / text.length >= 0.95 ? text : undefined;
}

export function findDecodableBlobs(text: string): DecodedBlob[] {
  const blobs: DecodedBlob[] = [];
  const decode = (run: string, encoding: DecodedBlob['encoding']) =>
    encoding === 'hex' ? Buffer.from(run, 'hex') : Buffer.from(run, 'base64');
  const take = (start: number, run: string, encoding: DecodedBlob['encoding']) => {
    if (run.length > HEAD_CHARS && asText(decode(run.slice(0, HEAD_CHARS), encoding)) === undefined) return;
    const decoded = asText(decode(run, encoding));
    if (decoded !== undefined) blobs.push({ start, end: start + run.length, encoding, text: decoded });
  };
  for (const run of runs(text)) {
    const value = text.slice(run.start, run.end);
    if (run.hex) {
      // A hex run is also a base64 run; it is read as hex only (its base64 reading is noise).
      if (value.length >= MIN_HEX_CHARS && value.length % 2 === 0) take(run.start, value, 'hex');
      continue;
    }
    // Words, identifiers and paths are base64 runs too; real base64 of text mixes cases and digits.
    if (!/[0-9+/=]/.test(value) || !/[a-z]/.test(value) || !/[A-Z]/.test(value)) continue;
    take(run.start, value, 'base64');
  }
  return blobs;
}
