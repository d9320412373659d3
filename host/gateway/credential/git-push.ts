import { createHash } from 'node:crypto';
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
  /** The commits the pack carries, in pack order (git writes the newest first). */
  commits: PushedCommit[];
  /**
   * Paths whose new content is in the pack, as far as the pack names them: a tree sent as a delta
   * against the remote's copy (usual for a changed folder) names only what it adds, so such a path starts
   * with `…/`, and a changed file whose name is only on the remote is not here but counted in `unnamed`.
   */
  files: string[];
  /**
   * Objects the pack does not name: deltas against the remote's copies (whose folder only the remote's
   * trees could tell), and deltas against a blob of the pack (blobs are hashed, not kept, to bound memory).
   */
  unnamed: number;
}

/** One commit of a push, as its object says (the author is a claim of whoever made the commit). */
export interface PushedCommit {
  id: string;
  author: string;
  /** ISO 8601, from the author line's seconds and zone. */
  date: string;
  message: string;
  tree: string;
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

/** A git delta applied to its base (both whole in memory); undefined when the delta does not fit its base. */
function applyDelta(base: Buffer, delta: Buffer): Buffer | undefined {
  let pos = 0;
  const size = () => {
    let n = 0;
    let shift = 0;
    let byte;
    do {
      byte = delta[pos++] ?? 0;
      n += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return n;
  };
  if (size() !== base.length) return undefined;
  const out = Buffer.alloc(size());
  let at = 0;
  while (pos < delta.length) {
    const op = delta[pos++] ?? 0;
    if (op & 0x80) {
      let offset = 0;
      let length = 0;
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) offset += (delta[pos++] ?? 0) * 2 ** (8 * bit);
      for (let bit = 0; bit < 3; bit++) if (op & (16 << bit)) length += (delta[pos++] ?? 0) * 2 ** (8 * bit);
      if (length === 0) length = 0x10000;
      if (offset + length > base.length || at + length > out.length) return undefined;
      base.copy(out, at, offset, offset + length);
      at += length;
    } else if (op > 0) {
      if (at + op > out.length) return undefined;
      delta.copy(out, at, pos, pos + op);
      at += op;
      pos += op;
    } else return undefined;
  }
  return at === out.length ? out : undefined;
}

const TYPE_NAMES: Record<number, string> = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag' };
const objectId = (type: number, data: Buffer) =>
  createHash('sha1').update(`${TYPE_NAMES[type]} ${data.length}\0`).update(data).digest('hex');

interface TreeEntry {
  mode: string;
  name: string;
  id: string;
}

/** A tree's entries: `<mode> <name>\0<20-byte id>` each. */
function treeEntries(tree: Buffer): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let pos = 0;
  while (pos < tree.length) {
    const space = tree.indexOf(0x20, pos);
    const nul = tree.indexOf(0, space);
    if (space < 0 || nul < 0 || nul + 21 > tree.length) break;
    entries.push({
      mode: tree.toString('latin1', pos, space),
      name: tree.toString('utf8', space + 1, nul),
      id: tree.toString('hex', nul + 1, nul + 21),
    });
    pos = nul + 21;
  }
  return entries;
}

function parseCommit(id: string, data: Buffer): PushedCommit {
  const text = data.toString('utf8');
  const blank = text.indexOf('\n\n');
  const head = blank < 0 ? text : text.slice(0, blank);
  const author = /^author (.*) (\d+) ([+-]\d{4})$/m.exec(head);
  const seconds = Number(author?.[2] ?? Number.NaN);
  return {
    id,
    tree: /^tree ([0-9a-f]{40})$/m.exec(head)?.[1] ?? '',
    author: author?.[1] ?? '',
    date: Number.isFinite(seconds) ? new Date(seconds * 1000).toISOString() : '',
    message: blank < 0 ? '' : text.slice(blank + 2).trimEnd(),
  };
}

interface PackObject {
  type: number;
  /** Kept for commits and trees (and what a delta in the pack may need): blobs are only hashed. */
  data?: Buffer;
  id?: string;
  /** A delta whose base this pack does not hold (git's thin packs: a change against the remote's copy). */
  delta?: Buffer;
  baseOffset?: number;
  baseId?: string;
}

function readPack(
  pack: Buffer,
  maxTextBytes: number,
): { text: string[]; unreadable: number; objects: PackObject[] } {
  const text: string[] = [];
  const objects: PackObject[] = [];
  let textBytes = 0;
  const keep = (data: Buffer) => {
    if (textBytes >= maxTextBytes || !looksLikeText(data)) return;
    const part = data.subarray(0, maxTextBytes - textBytes);
    textBytes += part.length;
    text.push(part.toString('utf8'));
  };
  if (pack.length < 12 || pack.toString('latin1', 0, 4) !== 'PACK') return { text, unreadable: 1, objects };
  const count = pack.readUInt32BE(8);
  // sha256 repositories use 32-byte ids; the remote's object format is sha1 unless it says otherwise.
  const idBytes = 20;
  const byOffset = new Map<number, PackObject>();
  let pos = 12;
  for (let i = 0; i < count; i++) {
    if (pos >= pack.length) return { text, unreadable: count - i, objects };
    const start = pos;
    let byte = pack[pos++] ?? 0;
    const type = (byte >> 4) & 7;
    while (byte & 0x80) byte = pack[pos++] ?? 0;
    const object: PackObject = { type };
    if (type === 6) {
      byte = pack[pos++] ?? 0;
      let back = byte & 0x7f;
      while (byte & 0x80) {
        byte = pack[pos++] ?? 0;
        back = (back + 1) * 128 + (byte & 0x7f);
      }
      object.baseOffset = start - back;
    } else if (type === 7) {
      object.baseId = pack.toString('hex', pos, pos + idBytes);
      pos += idBytes;
    }
    let inflated: { buffer: Buffer; engine: { bytesWritten: number } };
    try {
      inflated = inflateSync(pack.subarray(pos), { info: true }) as unknown as typeof inflated;
    } catch {
      return { text, unreadable: count - i, objects };
    }
    pos += inflated.engine.bytesWritten;
    const data = inflated.buffer;
    if (type === 1 || type === 3 || type === 4) keep(data);
    else if (type === 6 || type === 7) for (const insert of deltaInserts(data)) keep(insert);
    if (type >= 1 && type <= 4) {
      object.id = objectId(type, data);
      if (type !== 3) object.data = data;
    } else if ((type === 6 || type === 7) && data.length <= MAX_KEPT_DELTA) object.delta = data;
    objects.push(object);
    byOffset.set(start, object);
  }
  // Deltas whose base is a commit or tree of this pack are resolved (in pack order a base comes first).
  const byId = new Map(objects.filter((o) => o.id).map((o) => [o.id, o]));
  for (const o of objects) {
    if (!o.delta) continue;
    const base = o.baseOffset === undefined ? byId.get(o.baseId) : byOffset.get(o.baseOffset);
    const whole = base?.data && applyDelta(base.data, o.delta);
    if (!base || !whole) continue;
    o.type = base.type;
    o.id = objectId(o.type, whole);
    o.data = whole;
    delete o.delta;
    byId.set(o.id, o);
  }
  return { text, unreadable: 0, objects };
}

const MAX_FILES = 200;
// A tree's or a commit's delta is small; a larger one is a file's, which names nothing and need not be kept.
const MAX_KEPT_DELTA = 256 * 1024;

/** The commits, and the paths of new content the pack names (see `ParsedPush.files`). */
function describePack(objects: PackObject[]): Pick<ParsedPush, 'commits' | 'files' | 'unnamed'> {
  const byId = new Map(objects.filter((o) => o.id !== undefined).map((o) => [o.id ?? '', o]));
  const files = new Set<string>();
  const named = new Set<string>();
  // Each tree is read once for the whole push: a thousand commits of one big tree cost one walk, not a thousand.
  const seen = new Set<string>();
  const walk = (entries: TreeEntry[], prefix: string) => {
    for (const e of entries) {
      const inPack = byId.get(e.id);
      if (!inPack || files.size >= MAX_FILES) continue;
      named.add(e.id);
      if (inPack.type === 2 && inPack.data && !seen.has(e.id)) {
        seen.add(e.id);
        walk(treeEntries(inPack.data), `${prefix}${e.name}/`);
      } else if (inPack.type === 3) files.add(`${prefix}${e.name}`);
    }
  };
  const commits: PushedCommit[] = [];
  for (const o of objects)
    if (o.type === 1 && o.id && o.data) {
      const c = parseCommit(o.id, o.data);
      commits.push(c);
      named.add(c.tree);
      const root = byId.get(c.tree);
      if (root?.data && !seen.has(c.tree)) {
        seen.add(c.tree);
        walk(treeEntries(root.data), '');
      }
    }
  // A tree sent as a delta against the remote's copy: what it inserts whole is an added entry, in a folder
  // whose path only the remote's trees could tell.
  for (const o of objects) if (o.delta) walk(insertedEntries(o.delta), '…/');
  const unnamed = objects.filter(
    (o) => o.type !== 1 && o.type !== 4 && !(o.id !== undefined && named.has(o.id)),
  ).length;
  return { commits, files: [...files].sort(), unnamed };
}

const MODE = '(?:1[02]0[0-7]{3}|40000|160000)';
const ENTRY_IN_INSERTS = new RegExp(`(${MODE}) ((?:(?!${MODE} )[^\\0/]){1,255})\\0`, 'g');

/**
 * Whole tree entries among the bytes a delta inserts. Any match whose id is not an object of the pack is
 * ignored by the caller, so bytes of a file that merely look like an entry name nothing.
 */
function insertedEntries(delta: Buffer): TreeEntry[] {
  const inserted = Buffer.concat(deltaInserts(delta));
  const latin = inserted.toString('latin1');
  const entries: TreeEntry[] = [];
  // A name never holds another entry's start: a partial entry before this one is not taken into it.
  for (const m of latin.matchAll(ENTRY_IN_INSERTS)) {
    const at = m.index + m[0].length;
    if (at + 20 > inserted.length) break;
    entries.push({
      mode: m[1] ?? '',
      name: Buffer.from(m[2] ?? '', 'latin1').toString('utf8'),
      id: inserted.toString('hex', at, at + 20),
    });
  }
  return entries;
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
  if (pack.length === 0) return { updates, text: '', unreadable: 0, commits: [], files: [], unnamed: 0 };
  const read = readPack(pack, maxTextBytes);
  return {
    updates,
    text: read.text.join('\n'),
    unreadable: read.unreadable,
    ...describePack(read.objects),
  };
}

/** What an owner's question about a push shows beyond its refs: the commits and the files, within a budget. */
export interface PushSummary {
  commits: { id: string; author: string; date: string; message: string }[];
  commitsNotShown?: number;
  files: string[];
  filesNotShown?: number;
  filesNotNamed?: string;
}

const MESSAGE_CHARS = 240;

/**
 * The commits (short id, author, date, message) and files of a push, cut to `budget` characters of
 * pretty JSON: the approval text shows its parameters whole or not at all, so what is cut is counted
 * here rather than left to make the question unaskable. What runs is still the pack the host read.
 */
export function summarizePush(p: ParsedPush, budget = 1600): PushSummary {
  const summary: PushSummary = { commits: [], files: [] };
  const size = () => JSON.stringify(summary, null, 2).length;
  const message = (m: string) =>
    m.length > MESSAGE_CHARS
      ? `${m.slice(0, MESSAGE_CHARS)}… (${m.length - MESSAGE_CHARS} more characters)`
      : m;
  for (const [i, c] of p.commits.entries()) {
    summary.commits.push({
      id: c.id.slice(0, 12),
      author: c.author,
      date: c.date,
      message: message(c.message),
    });
    if (size() > budget * 0.6) {
      summary.commits.pop();
      summary.commitsNotShown = p.commits.length - i;
      break;
    }
  }
  for (const [i, f] of p.files.entries()) {
    summary.files.push(f);
    // Room is left for the counts and the note that follow.
    if (size() > budget - 200) {
      summary.files.pop();
      summary.filesNotShown = p.files.length - i;
      break;
    }
  }
  if (p.unnamed > 0)
    summary.filesNotNamed = `${p.unnamed} more changed object${p.unnamed === 1 ? ' was' : 's were'} sent as a delta (against the remote's copy or a file's earlier version), so the push does not name ${p.unnamed === 1 ? 'its file' : 'their files'}`;
  return summary;
}
