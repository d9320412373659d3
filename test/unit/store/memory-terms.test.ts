import { describe, expect, it } from 'vitest';
import { indexTerms, unicodeWords, words } from '../../../host/store/memory-terms.ts';

/** Deterministic pseudo-random numbers, so a failure names the same strings every time. */
function lcg(seed: number) {
  let s = seed;
  return () => (s = (s * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

describe('the words the memory index keeps', () => {
  it('cuts ASCII text on its fast path exactly as the Unicode path does', () => {
    const random = lcg(37);
    for (let n = 0; n < 2000; n += 1) {
      const length = Math.floor(random() * 80);
      const text = Array.from({ length }, () => String.fromCharCode(Math.floor(random() * 128))).join('');
      expect(words(text)).toEqual(unicodeWords(text));
    }
    expect(words("The plumber's number: 0612-34 (CALL_him)")).toEqual([
      'the',
      'plumber',
      's',
      'number',
      '0612',
      '34',
      'call',
      'him',
    ]);
  });

  it('takes text with any non-ASCII character through the Unicode path', () => {
    expect(words('Crème brûlée à 9€, ΣΟΦΙΑ')).toEqual(['creme', 'brulee', 'a', '9', 'σοφια']);
    expect(words('café')).toEqual(unicodeWords('café'));
  });

  it('keeps each distinct word once, as a term of the row’s group', () => {
    expect(indexTerms('g1', 'Call Sam, call now')).toBe('6731xcall 6731xsam 6731xnow');
    expect(indexTerms('g1', '')).toBe('');
  });

  it('keeps the first of each word in order, however many words a row has', () => {
    const random = lcg(41);
    for (const length of [3, 64, 65, 500]) {
      const text = Array.from({ length }, () => `w${Math.floor(random() * 40)}`).join(' ');
      const once = [...new Set(words(text))].map((w) => `6731x${w}`).join(' ');
      expect(indexTerms('g1', text)).toBe(once);
    }
  });
});
