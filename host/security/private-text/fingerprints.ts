/**
 * Winnowed k-gram fingerprints (Schleimer, Wilkerson and Aiken's winnowing) over canonical text: a hash of
 * every `K` consecutive characters, rolled in one pass, and of each window of `W` consecutive hashes the
 * smallest kept. Two texts that share a run of at least `K + W - 1` characters share a kept fingerprint,
 * whatever else surrounds the run, so an index of the kept ones (about 2 / (W + 1) of the positions) finds
 * every such overlap while holding a fraction of the hashes. A hash only nominates a place: the index then
 * compares the characters themselves, so a collision costs a comparison, never a wrong match.
 */

/** Characters per k-gram of canonical text (letters and digits only: separators are already gone). */
export const K = 12;
/** Hashes per winnowing window: an overlap of K + W - 1 = 17 canonical characters is always seen. */
export const W = 6;

/** An odd multiplier: arithmetic modulo 2^32 (Math.imul) stays a bijection per step. */
const BASE = 0x01000193;

/** BASE^(K-1) modulo 2^32, to take the character leaving the window out of the rolling hash. */
const OUTGOING = (() => {
  let p = 1;
  for (let i = 0; i < K - 1; i++) p = Math.imul(p, BASE);
  return p;
})();

/** The hash of every k-gram of `text`, at the k-gram's start; empty for text shorter than K. */
export function kgramHashes(text: string): Uint32Array {
  const n = text.length - K + 1;
  if (n <= 0) return new Uint32Array(0);
  const out = new Uint32Array(n);
  let h = 0;
  for (let i = 0; i < K; i++) h = (Math.imul(h, BASE) + text.charCodeAt(i)) | 0;
  out[0] = h >>> 0;
  for (let i = 1; i < n; i++) {
    h = (h - Math.imul(text.charCodeAt(i - 1), OUTGOING)) | 0;
    h = (Math.imul(h, BASE) + text.charCodeAt(i + K - 1)) | 0;
    out[i] = h >>> 0;
  }
  return out;
}

/**
 * The winnowed fingerprints of `text`: [hash, position] pairs, each position once, left to right. In every
 * window of W hashes the smallest is kept (the rightmost of equal ones, as the paper does, so a run of one
 * repeated k-gram keeps one position per window instead of every one).
 */
export function winnow(text: string): { hashes: Uint32Array; positions: Uint32Array } {
  const all = kgramHashes(text);
  const hashes: number[] = [];
  const positions: number[] = [];
  if (all.length === 0) return { hashes: new Uint32Array(0), positions: new Uint32Array(0) };
  const windows = Math.max(1, all.length - W + 1);
  let last = -1;
  for (let start = 0; start < windows; start++) {
    const end = Math.min(all.length, start + W);
    let min = start;
    for (let i = start + 1; i < end; i++) if ((all[i] as number) <= (all[min] as number)) min = i;
    if (min !== last) {
      hashes.push(all[min] as number);
      positions.push(min);
      last = min;
    }
  }
  return { hashes: Uint32Array.from(hashes), positions: Uint32Array.from(positions) };
}
