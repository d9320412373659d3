/**
 * Text reduced to what it spells, so a held secret is matched as the secret rather than its spelling:
 * compatibility forms folded (NFKD: fullwidth, mathematical, ligature and circled letters become plain
 * ones), look-alike letters from other scripts mapped to the Latin letter they imitate, case folded, and
 * everything an agent can put between characters without changing what they give away removed — spaces,
 * punctuation, escapes that stand for a line break or a byte, Unicode format characters (zero-width
 * spaces and joiners, bidi marks) and combining marks.
 *
 * The same function is applied to the secrets and to the scanned text, so a match on the canonical forms
 * is a match of the secret. Offsets of a match are mapped back to the original text only when there is a
 * match, because this runs over every scanned text.
 */

/**
 * What an agent may put between a secret's characters, once non-ASCII characters are folded (format
 * characters, combining marks, other whitespace and controls fold to nothing): ASCII whitespace and
 * controls, " ' ` + , . / : ; | - _ ( ) [ ] { } \\ % = & # and *; escapes that stand for a line break or
 * tab as written in JSON (`\\n`, `\\r`, `\\t`); and prefixes in front of a byte or code written as hex
 * (`\\x41`, `0x41`, `\\u0041`, `&#x41;`). ASCII only and without the `u` flag: this runs over every text.
 */
const SEPARATORS =
  /\\[nrt]|\\x(?=[0-9a-fA-F]{2})|\\u00(?=[0-9a-fA-F]{2})|&#x(?=[0-9a-fA-F]{2})|(?<![0-9A-Za-z])0[xX](?=[0-9a-fA-F]{2})|[\0-\x20\x7f"'`+,./:;|\-_()[\]{}\\%=&#*]+/g;

/**
 * Letters of other scripts that render like a Latin letter, as `<look-alike><letter>` pairs (a subset of
 * Unicode's confusables.txt: the Cyrillic, Greek and Armenian letters that look like a basic Latin letter
 * or digit in common fonts). NFKD already folds fullwidth, mathematical and other compatibility forms.
 * Hand-written because no maintained npm package ships the table without a runtime of its own; a letter
 * missing here only means that one disguise is not undone.
 */
const CONFUSABLES: Record<string, string> = Object.fromEntries(
  [
    // Cyrillic
    'аa вb еe ёe кk мm нh оo рp сc тt уy хx ѕs іi їi јj ԁd ԛq ԝw һh ӏl ьb гr пn з3 б6 ч4',
    // Greek
    'αa βb εe ηn ιi κk νv οo ρp τt υu χx γy ωw ϲc ϳj ζz μu',
    // Armenian
    'օo սu հh ոn զq ցg',
    // Latin letters and signs that imitate others
    'ıi ȷj ℓl ſs ɡg ɑa ɩi ʋu ᴠv ꞵb',
  ]
    .join(' ')
    .split(' ')
    .map((pair) => [...pair]),
);

/** Folded to nothing: marks, format characters, controls and whitespace outside ASCII. */
const INVISIBLE = /[\p{M}\p{Cf}\p{Cc}\s]/gu;

/** One non-ASCII character in canonical form (possibly empty, possibly several characters). */
function canonicalChar(ch: string): string {
  const decomposed = ch.toLowerCase().normalize('NFKD').replace(INVISIBLE, '');
  let out = '';
  for (const c of decomposed) out += CONFUSABLES[c] ?? c;
  return out;
}

/** Has the text any character outside ASCII? A native regex test, so plain text costs almost nothing. */
const NON_ASCII = /[^\0-\x7f]/;
const NON_ASCII_CHARS = /[^\0-\x7f]/gu;

export interface CanonicalText {
  /** The canonical form: folded, lower-cased, separators removed. */
  text: string;
  /** The offset in the original text of the character at `index` in `text`. */
  originalOffset(index: number): number;
}

/** The offset in `text` of the character at `index` in `text` with separators removed. */
function offsetBeforeSqueeze(text: string, index: number): number {
  let kept = 0;
  let from = 0;
  for (const m of text.matchAll(SEPARATORS)) {
    if (kept + (m.index - from) > index) break;
    kept += m.index - from;
    from = m.index + m[0].length;
  }
  return from + (index - kept);
}

/**
 * Folds the non-ASCII characters of `text` (a native replace; ASCII passes unchanged, and lower-casing it
 * later keeps offsets) and returns how to map an offset in the folded text back. Only folds that change
 * a character's length are recorded, so the mapping costs nothing for most text.
 */
function foldNonAscii(text: string): { folded: string; toOriginal: (index: number) => number } {
  const cache = new Map<string, string>();
  // Per length-changing fold: where it starts in the folded text, in the original, and both lengths.
  const edits: [folded: number, original: number, inLength: number, outLength: number][] = [];
  let shift = 0;
  const folded = text.replace(NON_ASCII_CHARS, (ch: string, offset: number) => {
    let out = cache.get(ch);
    if (out === undefined) {
      out = canonicalChar(ch);
      cache.set(ch, out);
    }
    if (out.length !== ch.length) {
      edits.push([offset + shift, offset, ch.length, out.length]);
      shift += out.length - ch.length;
    }
    return out;
  });
  const toOriginal = (index: number) => {
    let lo = 0;
    let hi = edits.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((edits[mid] as (typeof edits)[number])[0] <= index) lo = mid + 1;
      else hi = mid;
    }
    const edit = edits[lo - 1];
    if (edit === undefined) return index;
    const [at, original, inLength, outLength] = edit;
    return index < at + outLength ? original : original + inLength + (index - at - outLength);
  };
  return { folded, toOriginal };
}

export function canonicalText(text: string): CanonicalText {
  if (!NON_ASCII.test(text)) {
    return {
      text: text.replace(SEPARATORS, '').toLowerCase(),
      originalOffset: (index) => offsetBeforeSqueeze(text, index),
    };
  }
  const { folded, toOriginal } = foldNonAscii(text);
  return {
    text: folded.replace(SEPARATORS, '').toLowerCase(),
    originalOffset: (index) => toOriginal(offsetBeforeSqueeze(folded, index)),
  };
}

/** The canonical form alone, for the secrets themselves. */
export const canonical = (text: string): string => canonicalText(text).text;
