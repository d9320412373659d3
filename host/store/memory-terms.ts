import type Database from 'better-sqlite3';

/**
 * The words the memory index holds (migration 019): each word of a row is stored as a term of its group,
 * `<hex of the group id>x<word>`, so a word's postings are clustered by group and a search reads only its
 * own group's (before, one doclist per word held every group's rows and each query intersected it with the
 * group's scope token). The words are cut here, not by FTS5's tokenizer, and the index's `ascii` tokenizer
 * splits only on ASCII that is neither letter nor digit, which a word never holds: every term of a row
 * therefore starts with its own group's prefix, and the hex of a group id holds no `x`, so no other
 * group's prefix can be read into it.
 */

const MAX_TERMS = 16;

// eslint-disable-next-line no-control-regex -- the test is exactly "nothing outside ASCII"
const ASCII_ONLY = /^[\x00-\x7f]*$/;

/** A text's words as the index keeps them: letters and digits, lower case, diacritics removed. */
export function words(text: string): string[] {
  // Most text is ASCII, where NFD changes nothing, there is no mark to remove and a letter or digit is
  // [a-z0-9] once lower-cased: the same words for a fifth of the CPU (the indexer cuts every message, the
  // rank every candidate). Anything else takes the Unicode path (test/unit/store/memory-terms.test.ts).
  if (ASCII_ONLY.test(text)) return text.toLowerCase().match(/[a-z0-9]+/g) ?? [];
  return unicodeWords(text);
}

/** The general cut, for any text. */
export function unicodeWords(text: string): string[] {
  return (
    text
      .normalize('NFD')
      .replace(/\p{M}/gu, '')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

/** The words of a query; anything but letters and digits separates them, so FTS5's syntax cannot come in. */
export function queryTerms(text: string): string[] {
  const all = [...new Set(words(text))];
  // A lone letter ("plumber's" → plumber, s) would have to match too: kept only when it is all there is.
  const real = all.filter((w) => w.length > 1);
  return (real.length > 0 ? real : all).slice(0, MAX_TERMS);
}

/** Every term of the group starts with this. */
const groupPrefix = (groupId: string) => `${Buffer.from(groupId, 'utf8').toString('hex')}x`;

/** The term of one word in one group's postings. */
export function groupTerm(groupId: string, word: string): string {
  return `${groupPrefix(groupId)}${word}`;
}

/** Words of one row above this many are told apart by a Set; fewer, by a scan of the kept ones. */
const SCAN_LIMIT = 64;

/**
 * What the index holds for a row of the group: each distinct word once, in order, as the group's term.
 * The indexer cuts every message through this, so it avoids what cost most (a Set per row, and the
 * prefix's `Buffer` when the caller has it already): ~1.7 µs a message instead of ~4.2.
 */
export function indexTerms(groupId: string, text: string, prefix = groupPrefix(groupId)): string {
  const all = words(text);
  const kept = all.length > SCAN_LIMIT ? [...new Set(all)] : all.filter((w, i) => all.indexOf(w) === i);
  return kept.length === 0 ? '' : prefix + kept.join(` ${prefix}`);
}

/** Group prefixes one connection keeps, at most (a host has a few thousand groups). */
const PREFIXES_KEPT = 4096;

/**
 * The SQL function the index's triggers and the indexer call (`memory_terms(group_id, text)`), on every
 * connection that writes: a connection without it cannot write a note, a document or an indexed
 * message's edit at all (SQLite refuses the trigger), rather than index it wrongly. Each connection keeps
 * its groups' prefixes: the hex of a group id was as dear as the rest of the cut.
 */
export function registerMemoryTerms(db: Database.Database): void {
  const prefixes = new Map<string, string>();
  const prefixOf = (groupId: string): string => {
    let prefix = prefixes.get(groupId);
    if (prefix === undefined) {
      if (prefixes.size >= PREFIXES_KEPT) prefixes.clear();
      prefix = groupPrefix(groupId);
      prefixes.set(groupId, prefix);
    }
    return prefix;
  };
  db.function('memory_terms', { deterministic: true }, (groupId: unknown, text: unknown) => {
    const group = String(groupId);
    return indexTerms(group, String(text ?? ''), prefixOf(group));
  });
}
