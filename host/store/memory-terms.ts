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

/** What the index holds for a row of the group: each distinct word once, as the group's term. */
export function indexTerms(groupId: string, text: string): string {
  const prefix = groupPrefix(groupId);
  let terms = '';
  for (const w of new Set(words(text))) terms += terms === '' ? prefix + w : ` ${prefix}${w}`;
  return terms;
}

/**
 * The SQL function the index's triggers call (`memory_terms(group_id, text)`), on every connection that
 * writes: a connection without it cannot write a note, a document or an indexed message's edit at all
 * (SQLite refuses the trigger), rather than index it wrongly.
 */
export function registerMemoryTerms(db: Database.Database): void {
  db.function('memory_terms', { deterministic: true }, (groupId: unknown, text: unknown) =>
    indexTerms(String(groupId), String(text ?? '')),
  );
}
