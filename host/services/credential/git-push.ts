import { inflateSync } from 'node:zlib';

/**
 * What a push says, read from the body of git's `git-receive-pack` request (smart HTTP): the ref update
 * commands (pkt-lines up to the first flush) and the text inside the pack that follows, so it can be
 * scanned for secrets. A pack is binary (zlib-deflated objects, most of them deltas against objects the
 * host never sees), so only this is read: whole commits and tags (message, author), whole blobs that
 * look like text, and the literal bytes a delta inserts (the new text of a changed file; what it copies
 * from its base was already on the remote). Trees and binary blobs are skipped.
 */

export interface RefUpdate {
  ref: string;
  oldId: string;
  newId: string;
}

export interface ParsedPush {
  updates: RefUpdate[];
  /** The pack's text, joined by newlines; '' for a push without a pack (only deletions). */
  text: string;
  /** Objects that could not be read (a damaged pack): the caller fails closed on them. */
  unreadable: number;
}

const ZERO_ID = /^0+$/;
export const isDeletion = (u: RefUpdate) => ZERO_ID.test(u.newId);

/** Reads pkt-lines from `start` up to and including a flush; returns their payloads and where it stopped. */
export function readPktLines(body: Buffer, start: number): { lines: Buffer[]; end: number } {
  const lines: Buffer[] = [];
  let pos = start;
  while (pos + 4 <= body.length) {
    const length = Number.parseInt(body.toString('latin1', pos, pos + 4), 16);
    if (!Number.isInteger(length) || (length > 0 && length < 4)) throw new Error('not a pkt-line');
    if (length === 0) return { lines, end: pos + 4 };
    if (pos + length > body.length) throw new Error('a pkt-line runs past the end');
    lines.push(body.subarray(pos + 4, pos + length));
    pos += length;
  }
  throw new Error('the ref update commands do not end with a flush');
}

function parseUpdate(line: Buffer): { update: RefUpdate; capabilities: string[] } {
  const text = line.toString('utf8');
  const nul = text.indexOf('\0');
  const command = (nul === -1 ? text : text.slice(0, nul)).replace(/\n$/, '');
  const capabilities =
    nul === -1
      ? []
      : text
          .slice(nul + 1)
          .trim()
          .split(' ');
  const match = /^([0-9a-f]{40,64}) ([0-9a-f]{40,64}) (\S+)$/.exec(command);
  if (!match) throw new Error(`not a ref update command: ${JSON.stringify(command.slice(0, 200))}`);
  return { update: { oldId: match[1] ?? '', newId: match[2] ?? '', ref: match[3] ?? '' }, capabilities };
}

function looksLikeText(data: Buffer): boolean {
  return !data.subarray(0, 8000).includes(0);
}

/** The literal runs a git delta inserts (its copy instructions refer to the base). */
function deltaInserts(delta: Buffer): Buffer[] {
  let pos = 0;
  // Two sizes (base, result), each a little-endian base-128 number.
  for (let n = 0; n < 2; n++) while (pos < delta.length && (delta[pos++] ?? 0) & 0x80);
  const inserts: Buffer[] = [];
  while (pos < delta.length) {
    const op = delta[pos++] ?? 0;
    if (op & 0x80) {
      // Copy: one byte for each offset and size bit set.
      for (let bit = 0; bit < 7; bit++) if (op & (1 << bit)) pos++;
    } else if (op > 0) {
      inserts.push(delta.subarray(pos, pos + op));
      pos += op;
    }
  }
  return inserts;
}

function readPack(pack: Buffer, maxTextBytes: number): { text: string[]; unreadable: number } {
  const text: string[] = [];
  let textBytes = 0;
  const keep = (data: Buffer) => {
    if (textBytes >= maxTextBytes || !looksLikeText(data)) return;
    const part = data.subarray(0, maxTextBytes - textBytes);
    textBytes += part.length;
    text.push(part.toString('utf8'));
  };
  if (pack.length < 12 || pack.toString('latin1', 0, 4) !== 'PACK') return { text, unreadable: 1 };
  const count = pack.readUInt32BE(8);
  // sha256 repositories use 32-byte ids; the remote's object format is sha1 unless it says otherwise.
  const idBytes = 20;
  let pos = 12;
  for (let i = 0; i < count; i++) {
    if (pos >= pack.length) return { text, unreadable: count - i };
    let byte = pack[pos++] ?? 0;
    const type = (byte >> 4) & 7;
    while (byte & 0x80) byte = pack[pos++] ?? 0;
    if (type === 6) {
      byte = pack[pos++] ?? 0;
      while (byte & 0x80) byte = pack[pos++] ?? 0;
    } else if (type === 7) pos += idBytes;
    let inflated: { buffer: Buffer; engine: { bytesWritten: number } };
    try {
      inflated = inflateSync(pack.subarray(pos), { info: true }) as unknown as typeof inflated;
    } catch {
      return { text, unreadable: count - i };
    }
    pos += inflated.engine.bytesWritten;
    if (type === 1 || type === 3 || type === 4) keep(inflated.buffer);
    else if (type === 6 || type === 7) for (const insert of deltaInserts(inflated.buffer)) keep(insert);
  }
  return { text, unreadable: 0 };
}

/** Reads a receive-pack request body (already un-gzipped). Throws on a body that is not one. */
export function parsePush(body: Buffer, maxTextBytes = 8 * 1024 * 1024): ParsedPush {
  const commands = readPktLines(body, 0);
  const updates: RefUpdate[] = [];
  let capabilities: string[] = [];
  for (const [i, line] of commands.lines.entries()) {
    // A signed push's certificate comes as its own section; the host reads plain ref updates only.
    if (line.toString('latin1').startsWith('push-cert')) throw new Error('signed pushes are not supported');
    const parsed = parseUpdate(line);
    if (i === 0) capabilities = parsed.capabilities;
    updates.push(parsed.update);
  }
  let end = commands.end;
  if (capabilities.includes('push-options')) end = readPktLines(body, end).end;
  const pack = body.subarray(end);
  if (pack.length === 0) return { updates, text: '', unreadable: 0 };
  const read = readPack(pack, maxTextBytes);
  return { updates, text: read.text.join('\n'), unreadable: read.unreadable };
}
