/**
 * The readings of an outgoing payload that the private-text index is matched against, each in canonical
 * form (canonical-text.ts: case, look-alike letters, separators and format characters undone): as
 * written, reversed and ROT13; URL-decoded; base64 and hex blobs decoded (also base64 cut at any offset,
 * as a payload split across calls leaves it), gzip and deflate inflated, two levels deep, as the secret
 * scanner reads them (encoded-blobs.ts); lists of character codes; and for a file, what gzip, zlib, zip and
 * tar hold, within a budget, or the printable runs of other binary data. Written by the party being
 * checked, so every step is bounded: what is past a budget is reported unread, never passed as read.
 */
import { gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import { canonical } from '../secrets/canonical-text.ts';
import { findDecodableBlobs, readableText } from '../secrets/encoded-blobs.ts';
import { errorCode } from '../../errors/error-code.ts';

export interface PayloadView {
  /** Canonical text. */
  text: string;
  /** How the payload spelled it: `plain`, `reversed`, `rot13`, `url-encoded`, `base64`, `gzip`, … */
  form: string;
}

export interface PayloadViews {
  views: PayloadView[];
  /** Something could not be read within the budget (a compressed file past it, nesting too deep). */
  unread?: string;
}

/** Decoded or inflated bytes read per payload, over every level. */
export const MAX_OPENED_BYTES = 4 * 1024 * 1024;
const MAX_DEPTH = 3;
const MIN_BASE64 = 16;
const MIN_CODES = 8;
const MIN_STRINGS_RUN = 16;

/** Bytes that read as text: a looser bar than the scanner's, since a file sent may hold some binary. */
const readsAsText = (bytes: Buffer) => readableText(bytes, 0.9);

interface Budget {
  opened: number;
  unread?: string;
}

/** Letters rotated by 13 (canonical text: lower-case letters and digits), in one pass over char codes. */
function rot13(text: string): string {
  const codes = new Uint16Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    codes[i] = c >= 0x61 && c <= 0x7a ? ((c - 0x61 + 13) % 26) + 0x61 : c;
  }
  return new TextDecoder('utf-16le').decode(codes);
}

function reversed(text: string): string {
  let out = '';
  for (let i = text.length - 1; i >= 0; i--) out += text[i];
  return out;
}

/** The canonical text and its reversal; returns the canonical text for further readings. */
function plainViews(text: string, form: string, out: PayloadView[]): string {
  const c = canonical(text);
  if (c.length > 0) out.push({ text: c, form }, { text: reversed(c), form: `${form}, reversed` });
  return c;
}

/** The payload as written also read in ROT13 (as the held-secret matcher does). */
function rot13View(c: string, form: string, out: PayloadView[]): void {
  if (/[a-z]/.test(c)) out.push({ text: rot13(c), form: `${form}, rot13` });
}

const isBase64Char = (c: number) =>
  (c >= 0x41 && c <= 0x5a) ||
  (c >= 0x61 && c <= 0x7a) ||
  (c >= 0x30 && c <= 0x39) ||
  c === 0x2b ||
  c === 0x2f ||
  c === 0x2d ||
  c === 0x5f;

/** Maximal runs of base64 characters of at least MIN_BASE64, by a loop (a regex costs V8 more here). */
function base64Runs(text: string): string[] {
  const out: string[] = [];
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    const inRun = i < text.length && isBase64Char(text.charCodeAt(i));
    if (inRun && start < 0) start = i;
    else if (!inRun && start >= 0) {
      if (i - start >= MIN_BASE64) out.push(text.slice(start, i));
      start = -1;
    }
  }
  return out;
}

/** Runs of base64 characters, each decoded at offsets 1-3 too: a split payload cuts base64 anywhere. */
function realignedBase64(text: string, out: PayloadView[], budget: Budget): void {
  for (const run of base64Runs(text)) {
    if (!/[0-9+/]/.test(run) || !/[a-z]/.test(run) || !/[A-Z]/.test(run)) continue;
    for (let skip = 1; skip < 4 && run.length - skip >= MIN_BASE64; skip++) {
      const body = run.slice(skip);
      const bytes = Buffer.from(body.slice(0, body.length - (body.length % 4)), 'base64');
      budget.opened += bytes.length;
      const decoded = readsAsText(bytes);
      if (decoded !== undefined) plainViews(decoded, 'base64 (cut)', out);
    }
  }
}

/** Decimal character codes written as a list (`72, 101, 108, …`). */
function charCodeViews(text: string, out: PayloadView[]): void {
  for (const m of text.matchAll(/(?:\d{2,7}[\s,;]+){7,}\d{2,7}/g)) {
    const codes = m[0].split(/[\s,;]+/).map(Number);
    if (codes.length < MIN_CODES || codes.some((c) => c < 9 || c > 0x10ffff)) continue;
    plainViews(String.fromCodePoint(...codes), 'char-codes', out);
  }
}

/** Hex left once separators are gone (`\x41\x42`, `41:42`, `0x41 0x42`). */
function spreadHexViews(c: string, out: PayloadView[]): void {
  for (const m of c.matchAll(/[0-9a-f]{32,}/g)) {
    const hex = m[0].length % 2 === 0 ? m[0] : m[0].slice(0, -1);
    const decoded = readsAsText(Buffer.from(hex, 'hex'));
    if (decoded !== undefined) plainViews(decoded, 'hex', out);
  }
}

function textViewsInto(text: string, form: string, depth: number, out: PayloadView[], budget: Budget): void {
  let c = plainViews(text, form, out);
  if (depth === 0) rot13View(c, form, out);
  let source = text;
  if (/%[0-9a-fA-F]{2}/.test(text)) {
    source = text.replace(/(?:%[0-9a-fA-F]{2})+/g, (escapes) => {
      try {
        return decodeURIComponent(escapes);
      } catch {
        return escapes;
      }
    });
    c = plainViews(source, `${form}, url-encoded`, out);
  }
  charCodeViews(source, out);
  spreadHexViews(c, out);
  if (depth >= MAX_DEPTH) return;
  for (const blob of findDecodableBlobs(source)) {
    if (blob.unread) {
      budget.unread ??= `a ${blob.encoding} blob inflates past the scanner's cap`;
      continue;
    }
    budget.opened += blob.text.length;
    if (budget.opened > MAX_OPENED_BYTES) {
      budget.unread ??= `more than ${MAX_OPENED_BYTES} bytes decoded`;
      return;
    }
    textViewsInto(blob.text, blob.encoding, depth + 1, out, budget);
  }
  if (depth === 0) realignedBase64(source, out, budget);
}

/** The readings of a text payload (a URL, a request body, a message, a tool's arguments). */
export function textViews(text: string): PayloadViews {
  const out: PayloadView[] = [];
  const budget: Budget = { opened: 0 };
  textViewsInto(text, 'plain', 0, out, budget);
  return budget.unread === undefined ? { views: out } : { views: out, unread: budget.unread };
}

/** Printable ASCII runs of binary data (`strings`): text kept uncompressed inside a PDF, an image, … */
function printableRuns(bytes: Buffer): string {
  const runs: string[] = [];
  let start = -1;
  for (let i = 0; i <= bytes.length; i++) {
    const b = i < bytes.length ? (bytes[i] as number) : 0;
    const printable = (b >= 0x20 && b < 0x7f) || b === 0x09 || b === 0x0a;
    if (printable && start < 0) start = i;
    else if (!printable && start >= 0) {
      if (i - start >= MIN_STRINGS_RUN) runs.push(bytes.toString('latin1', start, i));
      start = -1;
    }
  }
  return runs.join('\n');
}

/** The members of a zip file: local headers read in order, stored and deflated members only. */
function zipMembers(bytes: Buffer, budget: Budget): Buffer[] {
  const members: Buffer[] = [];
  let at = 0;
  while (at + 30 <= bytes.length && bytes.readUInt32LE(at) === 0x04034b50) {
    const flags = bytes.readUInt16LE(at + 6);
    const method = bytes.readUInt16LE(at + 8);
    const size = bytes.readUInt32LE(at + 18);
    const nameLength = bytes.readUInt16LE(at + 26);
    const extraLength = bytes.readUInt16LE(at + 28);
    const dataStart = at + 30 + nameLength + extraLength;
    // Sizes written after the data (flag bit 3) are not known here: the rest cannot be walked.
    if (flags & 0x08 || dataStart + size > bytes.length) {
      budget.unread ??= 'a zip member whose size is written after its data';
      break;
    }
    const data = bytes.subarray(dataStart, dataStart + size);
    if (method === 0) members.push(data);
    else if (method === 8) {
      const room = MAX_OPENED_BYTES - budget.opened;
      try {
        members.push(inflateRawSync(data, { maxOutputLength: Math.max(1, room) }));
      } catch {
        budget.unread ??= 'a zip member that does not inflate within the budget';
      }
    } else budget.unread ??= `a zip member compressed with method ${method}`;
    at = dataStart + size;
  }
  return members;
}

/** The files of a tar archive (ustar headers, 512-byte blocks). */
function tarMembers(bytes: Buffer): Buffer[] {
  const members: Buffer[] = [];
  let at = 0;
  while (at + 512 <= bytes.length && bytes.toString('latin1', at + 257, at + 262) === 'ustar') {
    const size = Number.parseInt(
      bytes
        .toString('latin1', at + 124, at + 136)
        .replace(/\0.*$/, '')
        .trim() || '0',
      8,
    );
    const type = bytes.toString('latin1', at + 156, at + 157);
    const dataStart = at + 512;
    if (!Number.isFinite(size) || size < 0) break;
    if (type === '0' || type === '\0' || type === '')
      members.push(bytes.subarray(dataStart, dataStart + size));
    at = dataStart + Math.ceil(size / 512) * 512;
  }
  return members;
}

function inflatedBytes(bytes: Buffer, budget: Budget): Buffer | undefined {
  const [b0 = 0, b1 = 0] = bytes;
  const gzip = b0 === 0x1f && b1 === 0x8b;
  const zlib = !gzip && (b0 & 0x0f) === 8 && ((b0 << 8) | b1) % 31 === 0;
  if (!gzip && !zlib) return undefined;
  const room = MAX_OPENED_BYTES - budget.opened;
  try {
    return (gzip ? gunzipSync : inflateSync)(bytes, { maxOutputLength: Math.max(1, room) });
  } catch (err) {
    // Two bytes of text can look like a zlib header; only gzip's magic or a stream past the budget is
    // compressed data that could not be read.
    if (gzip || errorCode(err) === 'ERR_BUFFER_TOO_LARGE') {
      budget.unread ??= `a ${gzip ? 'gzip' : 'zlib'} stream that does not inflate within ${MAX_OPENED_BYTES} bytes`;
      return Buffer.alloc(0);
    }
    return undefined;
  }
}

function bytesViewsInto(
  bytes: Buffer,
  form: string,
  depth: number,
  out: PayloadView[],
  budget: Budget,
): void {
  budget.opened += bytes.length;
  if (budget.opened > MAX_OPENED_BYTES) {
    budget.unread ??= `more than ${MAX_OPENED_BYTES} bytes in the file once opened`;
    return;
  }
  const inflated = inflatedBytes(bytes, budget);
  if (inflated !== undefined) {
    if (depth >= MAX_DEPTH) budget.unread ??= 'compressed data nested too deep';
    else bytesViewsInto(inflated, `${form}, inflated`, depth + 1, out, budget);
    return;
  }
  if (bytes.length >= 4 && bytes.readUInt32LE(0) === 0x04034b50) {
    for (const member of zipMembers(bytes, budget)) {
      if (depth >= MAX_DEPTH) budget.unread ??= 'an archive nested too deep';
      else bytesViewsInto(member, `${form}, zip member`, depth + 1, out, budget);
    }
    return;
  }
  if (bytes.length >= 512 && bytes.toString('latin1', 257, 262) === 'ustar') {
    for (const member of tarMembers(bytes)) {
      if (depth >= MAX_DEPTH) budget.unread ??= 'an archive nested too deep';
      else bytesViewsInto(member, `${form}, tar member`, depth + 1, out, budget);
    }
    return;
  }
  const text = readsAsText(bytes);
  if (text !== undefined) textViewsInto(text, form, depth, out, budget);
  else plainViews(printableRuns(bytes), `${form}, printable runs`, out);
}

/** The readings of a file sent with a message: opened as far as the budget goes. */
export function fileViews(bytes: Buffer): PayloadViews {
  const out: PayloadView[] = [];
  const budget: Budget = { opened: 0 };
  bytesViewsInto(bytes, 'file', 0, out, budget);
  return budget.unread === undefined ? { views: out } : { views: out, unread: budget.unread };
}
