import { isDeepStrictEqual } from 'node:util';
import { parse as parseToml } from 'smol-toml';
import { errorMessage } from '../errors/error-message.ts';

/**
 * Edits config.toml as text so the owner's comments and layout survive a change made by `carapace config
 * set` (and later by an approved chat proposal): smol-toml parses but does not round-trip comments. Only
 * the value spans of the changed keys are rewritten; a missing key is inserted under its table header, a
 * missing table appended. The edited text is parsed back and must equal the patch merged into the parsed
 * original, so a layout this editor does not understand is refused instead of written wrong.
 */

export type ConfigPath = string[];

export interface PatchEntry {
  path: ConfigPath;
  value: unknown;
}

export class TomlEditError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TomlEditError';
  }
}

const BARE_KEY = /^[A-Za-z0-9_-]+$/;

/** `a.b."c d"` → ['a', 'b', 'c d']; the same syntax TOML uses for keys. */
export function parseConfigPath(text: string): ConfigPath {
  const { keys, end } = readKey(text, 0);
  if (end !== text.length || keys.length === 0) {
    throw new TomlEditError(
      `"${text}" is not a key path (write it like assistant.name or groups.family.trigger)`,
    );
  }
  return keys;
}

export function formatConfigPath(path: ConfigPath): string {
  return path.map((k) => (BARE_KEY.test(k) ? k : JSON.stringify(k))).join('.');
}

/** Reads a dotted TOML key starting at `pos`; stops at the first character that cannot continue it. */
function readKey(line: string, pos: number): { keys: string[]; end: number } {
  const keys: string[] = [];
  let i = pos;
  for (;;) {
    while (line[i] === ' ' || line[i] === '\t') i++;
    const ch = line[i];
    if (ch === '"' || ch === "'") {
      const close = findStringEnd(line, i);
      if (close < 0) return { keys: [], end: pos };
      const literal = line.slice(i, close + 1);
      keys.push(ch === '"' ? (JSON.parse(literal) as string) : literal.slice(1, -1));
      i = close + 1;
    } else {
      const m = /^[A-Za-z0-9_-]+/.exec(line.slice(i));
      if (!m) return { keys: [], end: pos };
      keys.push(m[0]);
      i += m[0].length;
    }
    let j = i;
    while (line[j] === ' ' || line[j] === '\t') j++;
    if (line[j] !== '.') return { keys, end: i };
    i = j + 1;
  }
}

/** Index of the closing quote of the one-line string opening at `start`, or -1. */
function findStringEnd(line: string, start: number): number {
  const quote = line[start];
  for (let i = start + 1; i < line.length; i++) {
    if (quote === '"' && line[i] === '\\') {
      i++;
      continue;
    }
    if (line[i] === quote) return i;
  }
  return -1;
}

/**
 * End (exclusive) of the value starting at `start` on this line, before any trailing comment. A value
 * that continues on the next line (a multi-line array, inline table or string) is refused: rewriting it
 * would drop the comments inside it.
 */
function valueEnd(line: string, start: number, where: string): number {
  if (line.startsWith('"""', start) || line.startsWith("'''", start)) {
    throw new TomlEditError(`${where} is a multi-line string; change it in the file by hand`);
  }
  let depth = 0;
  let i = start;
  for (; i < line.length; i++) {
    const ch = line[i];
    if (ch === '"' || ch === "'") {
      const close = findStringEnd(line, i);
      if (close < 0) break;
      i = close;
    } else if (ch === '[' || ch === '{') depth++;
    else if (ch === ']' || ch === '}') depth--;
    else if (ch === '#' && depth === 0) break;
    else if (ch === '#')
      throw new TomlEditError(`${where} has a comment inside its value; change it by hand`);
  }
  if (depth !== 0) {
    throw new TomlEditError(`${where} spans several lines in the file; change it in the file by hand`);
  }
  let end = i;
  while (end > start && (line[end - 1] === ' ' || line[end - 1] === '\t')) end--;
  return end;
}

/** The value as TOML text; objects become inline tables only inside arrays (tables are written as keys). */
export function tomlValue(value: unknown, where: string): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'nan';
    if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
    return String(value);
  }
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return `[${value.map((v) => tomlValue(v, where)).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const parts = Object.entries(value).map(
      ([k, v]) => `${formatConfigPath([k])} = ${tomlValue(v, `${where}.${k}`)}`,
    );
    return parts.length ? `{ ${parts.join(', ')} }` : '{}';
  }
  throw new TomlEditError(`${where}: a config value cannot be ${value === null ? 'null' : typeof value}`);
}

/** Patch entries with plain-object values spread into one entry per leaf, so tables are edited key by key. */
export function flattenPatch(patch: PatchEntry[]): PatchEntry[] {
  const out: PatchEntry[] = [];
  const walk = (path: ConfigPath, value: unknown) => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date)) {
      for (const [k, v] of Object.entries(value)) walk([...path, k], v);
    } else out.push({ path, value });
  };
  for (const e of patch) walk(e.path, e.value);
  return out;
}

/** The parsed document with the patch applied; the objects on each path are copied, nothing else. */
export function mergePatch(doc: Record<string, unknown>, patch: PatchEntry[]): Record<string, unknown> {
  const root = { ...doc };
  for (const { path, value } of flattenPatch(patch)) {
    let cur: Record<string, unknown> = root;
    path.slice(0, -1).forEach((key, i) => {
      const next = cur[key];
      if (next !== undefined && (next === null || typeof next !== 'object' || Array.isArray(next))) {
        throw new TomlEditError(`${formatConfigPath(path.slice(0, i + 1))} is a value, not a table`);
      }
      cur[key] = { ...(next as Record<string, unknown> | undefined) };
      cur = cur[key] as Record<string, unknown>;
    });
    cur[path[path.length - 1] as string] = value;
  }
  return root;
}

interface Line {
  text: string;
  /** The table this line belongs to; null inside an array of tables (`[[x]]`), which is never edited. */
  table: ConfigPath | null;
  header?: ConfigPath;
  key?: { path: ConfigPath; valueStart: number };
}

function scanLines(text: string): Line[] {
  let table: ConfigPath | null = [];
  return text.split('\n').map((raw): Line => {
    const trimmed = raw.trimStart();
    const indent = raw.length - trimmed.length;
    if (trimmed.startsWith('[[')) {
      table = null;
      return { text: raw, table };
    }
    if (trimmed.startsWith('[')) {
      const { keys, end } = readKey(raw, indent + 1);
      if (keys.length && raw.slice(end).trimStart().startsWith(']')) {
        table = keys;
        return { text: raw, table, header: keys };
      }
      return { text: raw, table };
    }
    if (trimmed === '' || trimmed.startsWith('#')) return { text: raw, table };
    const { keys, end } = readKey(raw, indent);
    const eq = raw.indexOf('=', end);
    if (keys.length && eq >= 0 && raw.slice(end, eq).trim() === '') {
      let valueStart = eq + 1;
      while (raw[valueStart] === ' ' || raw[valueStart] === '\t') valueStart++;
      return { text: raw, table, key: { path: table ? [...table, ...keys] : [], valueStart } };
    }
    // A continuation line of a multi-line value.
    return { text: raw, table };
  });
}

const startsWith = (path: ConfigPath, prefix: ConfigPath) =>
  prefix.length <= path.length && prefix.every((k, i) => path[i] === k);

function setOne(lines: Line[], path: ConfigPath, value: unknown, expected: Record<string, unknown>): void {
  const where = formatConfigPath(path);
  const rendered = tomlValue(value, where);
  const existing = lines.find((l) => l.key && l.table && isDeepStrictEqual(l.key.path, path));
  if (existing?.key) {
    const { text } = existing;
    const end = valueEnd(text, existing.key.valueStart, where);
    existing.text = text.slice(0, existing.key.valueStart) + rendered + text.slice(end);
    return;
  }
  const holder = lines.find(
    (l) => l.key && l.table && l.key.path.length < path.length && startsWith(path, l.key.path),
  );
  if (holder?.key) {
    // A one-line inline table (`caps = { a = 1 }`) holds no comments: it is rewritten whole, merged.
    const merged = holder.key.path.reduce<unknown>((cur, k) => (cur as Record<string, unknown>)[k], expected);
    const { text } = holder;
    const end = valueEnd(text, holder.key.valueStart, formatConfigPath(holder.key.path));
    holder.text = text.slice(0, holder.key.valueStart) + tomlValue(merged, where) + text.slice(end);
    return;
  }
  const tablePath = path.slice(0, -1);
  const keyText = (table: ConfigPath) => `${formatConfigPath(path.slice(table.length))} = ${rendered}`;
  const header = lines.findIndex((l) => l.header && isDeepStrictEqual(l.header, tablePath));
  if (header >= 0) {
    lines.splice(lastKeyOfTable(lines, header) + 1, 0, { text: keyText(tablePath), table: tablePath });
    return;
  }
  if (tablePath.length === 0) {
    const firstHeader = lines.findIndex((l) => l.header || l.table === null);
    const lastKey = lastKeyBefore(lines, firstHeader < 0 ? lines.length : firstHeader);
    // With no top-level key yet, it goes after the file's opening comment block.
    let at = lastKey + 1;
    if (lastKey < 0) while (at < lines.length && lines[at]?.text.trimStart().startsWith('#')) at++;
    lines.splice(at, 0, { text: keyText([]), table: [] });
    return;
  }
  // No header for the table itself: append one at the end of the file.
  while (lines.length && lines[lines.length - 1]?.text.trim() === '') lines.pop();
  lines.push(
    { text: '', table: tablePath },
    { text: `[${formatConfigPath(tablePath)}]`, table: tablePath, header: tablePath },
    { text: keyText(tablePath), table: tablePath },
    { text: '', table: tablePath },
  );
}

/** Index after which a new key of the table headed at `header` goes: its last key line, or the header. */
function lastKeyOfTable(lines: Line[], header: number): number {
  let last = header;
  for (let i = header + 1; i < lines.length; i++) {
    const l = lines[i] as Line;
    if (l.header || l.table === null) break;
    if (l.key) last = i;
  }
  return last;
}

function lastKeyBefore(lines: Line[], stop: number): number {
  let last = -1;
  for (let i = 0; i < stop; i++) if (lines[i]?.key) last = i;
  return last;
}

/** The same data with every table as an ordinary object: smol-toml's tables have no prototype. */
function plain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plain);
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
}

/**
 * The config text with the patch applied, comments and layout kept. Throws TomlEditError when the
 * text cannot be edited safely (a multi-line value, a key inside an array of tables,
 * or a result that does not parse back to the merged document).
 */
export function editTomlText(text: string, patch: PatchEntry[]): string {
  const original = parseToml(text);
  const entries = flattenPatch(patch);
  const expected = mergePatch(original, entries);
  const lines = scanLines(text);
  for (const { path, value } of entries) setOne(lines, path, value, expected);
  const edited = lines.map((l) => l.text).join('\n');
  let reparsed: unknown;
  try {
    reparsed = parseToml(edited);
  } catch (err) {
    throw new TomlEditError(
      `the edited file would not parse (${errorMessage(err).split('\n')[0]}); change it by hand`,
    );
  }
  if (!isDeepStrictEqual(plain(reparsed), plain(expected))) {
    throw new TomlEditError(
      `the file's layout around ${entries.map((e) => formatConfigPath(e.path)).join(', ')} is not one this editor can change safely; change it by hand`,
    );
  }
  return edited;
}
