/** Character statistics the detectors use to tell random key material from words, ids and placeholders. */

/** Shannon entropy in bits per character. */
export function shannonEntropy(s: string): number {
  if (s.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let bits = 0;
  for (const c of counts.values()) {
    const p = c / s.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

export interface CharClasses {
  lower: boolean;
  upper: boolean;
  digit: boolean;
  other: boolean;
}

export function charClasses(s: string): CharClasses {
  const classes = { lower: false, upper: false, digit: false, other: false };
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 97 && c <= 122) classes.lower = true;
    else if (c >= 65 && c <= 90) classes.upper = true;
    else if (c >= 48 && c <= 57) classes.digit = true;
    else classes.other = true;
  }
  return classes;
}

/**
 * True when a token's variable part looks typed by a person rather than generated: a run of one
 * character (`xxxxxx`, `000000`), too few distinct characters, or an alphabet walk (`abcdef`, `123456`).
 * Documentation and redacted examples look like that; issued tokens do not.
 */
export function looksHandTyped(s: string): boolean {
  if (/(.)\1{5,}/.test(s)) return true;
  if (new Set(s).size < Math.min(10, Math.ceil(s.length / 3))) return true;
  let walk = 1;
  for (let i = 1; i < s.length; i++) {
    walk = s.charCodeAt(i) - s.charCodeAt(i - 1) === 1 ? walk + 1 : 1;
    if (walk >= 6) return true;
  }
  return false;
}
