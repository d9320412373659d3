/**
 * Base64 (standard and URL-safe) and hex runs that decode to text, so the scanner can look inside them:
 * a token or a `.env` file base64-encoded by a leaking agent reads as noise otherwise. Bounded by
 * construction, because the text is written by the party being checked: a run is first judged on its
 * first `HEAD_CHARS` (binary data such as an image stops there), decoded text is at most 3/4 of the run
 * it came from, so each level of nesting scans less than the one before, and the scanner stops at a fixed
 * depth (where it reports text blobs it did not open instead of passing them unread). Base64 that decodes
 * to gzip or deflate data is inflated (to at most `MAX_INFLATED_BYTES`) and read as text when it is.
 */

import { gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import { errorCode } from '../../errors/error-code.ts';

const MIN_BASE64_CHARS = 16;
const MIN_HEX_CHARS = 32;
const HEAD_CHARS = 4096;
/** Inflated output beyond this is cut: a small blob can expand a thousandfold (a zip bomb). */
const MAX_INFLATED_BYTES = 256 * 1024;

export interface DecodedBlob {
  start: number;
  end: number;
  encoding: 'base64' | 'hex' | 'gzip-base64' | 'deflate-base64';
  text: string;
  /** Inflated past the cap: the text was not read, and must be reported as such. */
  unread?: true;
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

/**
 * Decoded bytes that read as text: valid UTF-8, at least `printableShare` of it printable. Random bytes
 * almost never do.
 */
export function readableText(bytes: Buffer, printableShare = 0.95): string | undefined {
  if (bytes.length < 8) return undefined;
  const text = bytes.toString('utf8');
  if (text.includes('\uFFFD')) return undefined;
  let printable = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c >= 0x20 && c !== 0x7f) || c === 0x09 || c === 0x0a || c === 0x0d) printable++;
  }
  return printable / text.length >= printableShare ? text : undefined;
}

type Inflated = Pick<DecodedBlob, 'text' | 'encoding' | 'unread'>;

/** Which header compressed data starts with: gzip's magic bytes, or a valid zlib header. */
function compressionHeader(bytes: Buffer): 'gzip' | 'zlib' | undefined {
  const [b0 = 0, b1 = 0] = bytes;
  if (b0 === 0x1f && b1 === 0x8b) return 'gzip';
  return (b0 & 0x0f) === 8 && ((b0 << 8) | b1) % 31 === 0 ? 'zlib' : undefined;
}

const FIXED_BLOCK_LITERALS = 4;

/**
 * Could these bytes start a raw deflate stream of text? Raw deflate has no header, and handing every
 * base64 run of a text to zlib costs tens of microseconds each (a lockfile has hundreds of hashes), so
 * the first block is checked here first: a stored block's length must match its complement, a fixed
 * block must start with `FIXED_BLOCK_LITERALS` printable literals (text does; a back-reference cannot come
 * first), a dynamic block's code-length code must be complete. Random bytes pass about one time in fifty.
 */
export function mayBeRawDeflate(bytes: Buffer): boolean {
  let pos = 0;
  const bit = () => {
    const b = ((bytes[pos >>> 3] ?? 0) >>> (pos & 7)) & 1;
    pos++;
    return b;
  };
  const bits = (n: number) => {
    let v = 0;
    for (let i = 0; i < n; i++) v |= bit() << i;
    return v;
  };
  bit(); // BFINAL
  const type = bits(2);
  if (type === 0) {
    const at = 1;
    const len = (bytes[at] ?? 0) | ((bytes[at + 1] ?? 0) << 8);
    const nlen = (bytes[at + 2] ?? 0) | ((bytes[at + 3] ?? 0) << 8);
    return (len ^ 0xffff) === nlen;
  }
  if (type === 1) {
    for (let symbol = 0; symbol < FIXED_BLOCK_LITERALS; symbol++) {
      let code = 0;
      for (let i = 0; i < 8; i++) code = (code << 1) | bit();
      const literal = code - 48;
      const printable = (literal >= 0x20 && literal < 0x7f) || literal === 0x0a || literal === 0x09;
      if (code < 48 || code > 191 || !printable) return false;
    }
    return true;
  }
  if (type === 2) {
    bits(10); // HLIT, HDIST
    const count = bits(4) + 4;
    let kraft = 0;
    for (let i = 0; i < count; i++) {
      const length = bits(3);
      if (length > 0) kraft += 2 ** (7 - length);
    }
    return kraft === 128;
  }
  return false;
}

/**
 * Compressed data inflated, when it is: gzip and zlib by their headers, raw deflate when its first block
 * is plausible (`mayBeRawDeflate`) on short runs only. Output past the cap is not read:
 * the blob is returned as unread, so the scanner reports it instead of passing it.
 */
function inflated(bytes: Buffer, tryRaw: boolean): Inflated | undefined {
  const opts = { maxOutputLength: MAX_INFLATED_BYTES };
  const header = compressionHeader(bytes);
  if (header === undefined && !(tryRaw && mayBeRawDeflate(bytes))) return undefined;
  const encoding = header === 'gzip' ? 'gzip-base64' : 'deflate-base64';
  const inflate = header === 'gzip' ? gunzipSync : header === 'zlib' ? inflateSync : inflateRawSync;
  try {
    const text = readableText(inflate(bytes, opts));
    return text === undefined ? undefined : { text, encoding };
  } catch (err) {
    if (errorCode(err) === 'ERR_BUFFER_TOO_LARGE') return { text: '', encoding, unread: true };
    // Not compressed data: noise, like any other blob that does not read as text.
    return undefined;
  }
}

export function findDecodableBlobs(text: string): DecodedBlob[] {
  const blobs: DecodedBlob[] = [];
  const decode = (run: string, encoding: 'base64' | 'hex') =>
    encoding === 'hex' ? Buffer.from(run, 'hex') : Buffer.from(run, 'base64');
  const take = (start: number, run: string, encoding: 'base64' | 'hex') => {
    const end = start + run.length;
    const long = run.length > HEAD_CHARS;
    const head = decode(long ? run.slice(0, HEAD_CHARS) : run, encoding);
    if (readableText(head) !== undefined) {
      const decoded = long ? readableText(decode(run, encoding)) : readableText(head);
      if (decoded !== undefined) {
        blobs.push({ start, end, encoding, text: decoded });
        return;
      }
    }
    if (encoding === 'hex' || (long && compressionHeader(head) === undefined)) return;
    const packed = inflated(long ? decode(run, encoding) : head, !long);
    if (packed !== undefined) blobs.push({ start, end, ...packed });
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
