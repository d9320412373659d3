import { canonicalText, type CanonicalText } from '../secrets/canonical-text.ts';
import { K, kgramHashes, winnow } from './fingerprints.ts';

/**
 * Who a private text is private from. `group`: the group's own folder, private from every sink but the
 * group's own chat (its members wrote it or were shown it there). `owner`: what a `secret_data` service
 * returned and the admin project, private from every chat but the admin chat.
 */
export type PrivateScope = 'group' | 'owner';

export interface PrivateDocument {
  scope: PrivateScope;
  /** How the owner's question names where the text is (`notes/diary.md in the group folder`). */
  label: string;
  text: string;
}

/** A stretch of a private document found verbatim (in canonical form) in a payload. */
export interface PrivateOverlap {
  /** The document's key in the index; stable while the document is unchanged. */
  key: string;
  scope: PrivateScope;
  label: string;
  /** The stretch in the document's canonical text. */
  start: number;
  end: number;
}

export interface PrivateIndex {
  /** Adds or replaces a document. */
  set(key: string, doc: PrivateDocument): void;
  delete(key: string): void;
  keys(): IterableIterator<string>;
  /**
   * Every stretch of at least K canonical characters of a document in `scopes` that `view` (canonical
   * text) holds verbatim, each maximal (extended character by character both ways), one per place.
   */
  overlaps(view: string, scopes: ReadonlySet<PrivateScope>): PrivateOverlap[];
  /** The original words of a document around a stretch of its canonical text, cut to `maxChars`. */
  excerpt(key: string, start: number, end: number, maxChars: number): string;
  /** Canonical characters indexed, over every document. */
  readonly chars: number;
  readonly documents: number;
}

/** A fingerprint's place: document number × 2^24 + position (documents are cut to 2^24 characters). */
const POSITION_BITS = 2 ** 24;
export const MAX_DOCUMENT_CHARS = POSITION_BITS - 1;
/** 2^23 bits (1 MiB): for 1 MiB of private text (~300,000 kept hashes) about 3 % of misses pass the filter. */
const FILTER_BITS = 23;
const FILTER_BYTES = 2 ** (FILTER_BITS - 3);
const FILTER_MASK = 2 ** FILTER_BITS - 1;
const setBit = (filter: Uint8Array, hash: number) => {
  const at = (hash & FILTER_MASK) >>> 3;
  filter[at] = (filter[at] as number) | (1 << (hash & 7));
};
const hasBit = (filter: Uint8Array, hash: number) =>
  ((filter[(hash & FILTER_MASK) >>> 3] as number) & (1 << (hash & 7))) !== 0;

interface Indexed {
  key: string;
  scope: PrivateScope;
  label: string;
  /** The document as written, for the excerpt the owner is shown. */
  original: string;
  canonical: CanonicalText;
  hashes: Uint32Array;
}

/**
 * The private text of one owner (a group, the admin project, a run's secret answers) as winnowed
 * fingerprints pointing into the documents' canonical text. Documents come and go one at a time, so an
 * index is kept between runs and only what changed is read again (folder-source.ts).
 */
export function createPrivateIndex(): PrivateIndex {
  const docs: (Indexed | undefined)[] = [];
  const byKey = new Map<string, number>();
  const free: number[] = [];
  // A hash → one place, or several when the same k-gram was kept in more than one place.
  const places = new Map<number, number | number[]>();
  // A bit per hash value's low FILTER_BITS bits, set for every hash in `places`: most k-grams of a payload
  // are in no private text, and a bit test costs a fraction of a Map lookup. Rebuilt after a removal.
  let filter = new Uint8Array(FILTER_BYTES);
  let filterStale = false;
  let chars = 0;

  const addPlace = (hash: number, place: number) => {
    setBit(filter, hash);
    const at = places.get(hash);
    if (at === undefined) places.set(hash, place);
    else if (typeof at === 'number') places.set(hash, [at, place]);
    // A k-gram kept in many places (boilerplate) is checked in its first few; more is cost, not recall.
    else if (at.length < 8) at.push(place);
  };
  const dropPlaces = (hash: number, docNo: number) => {
    const at = places.get(hash);
    if (at === undefined) return;
    const mine = (p: number) => Math.floor(p / POSITION_BITS) === docNo;
    if (typeof at === 'number') {
      if (mine(at)) places.delete(hash);
      return;
    }
    const kept = at.filter((p) => !mine(p));
    if (kept.length === 0) places.delete(hash);
    else places.set(hash, kept.length === 1 ? (kept[0] as number) : kept);
  };

  const remove = (key: string) => {
    const docNo = byKey.get(key);
    if (docNo === undefined) return;
    const doc = docs[docNo] as Indexed;
    for (const hash of doc.hashes) dropPlaces(hash, docNo);
    chars -= doc.canonical.text.length;
    filterStale = true;
    docs[docNo] = undefined;
    byKey.delete(key);
    free.push(docNo);
  };

  return {
    set(key, doc) {
      remove(key);
      const original = doc.text.slice(0, MAX_DOCUMENT_CHARS);
      const canonical = canonicalText(original);
      const { hashes, positions } = winnow(canonical.text);
      const docNo = free.pop() ?? docs.length;
      docs[docNo] = { key, scope: doc.scope, label: doc.label, original, canonical, hashes };
      byKey.set(key, docNo);
      chars += canonical.text.length;
      for (let i = 0; i < hashes.length; i++) {
        addPlace(hashes[i] as number, docNo * POSITION_BITS + (positions[i] as number));
      }
    },
    delete: remove,
    keys: () => byKey.keys(),
    overlaps(view, scopes) {
      if (byKey.size === 0) return [];
      if (filterStale) {
        filter = new Uint8Array(FILTER_BYTES);
        for (const hash of places.keys()) setBit(filter, hash);
        filterStale = false;
      }
      const found: (PrivateOverlap & { docNo: number; viewStart: number })[] = [];
      const hashes = kgramHashes(view);
      const verify = (i: number, place: number) => {
        const docNo = Math.floor(place / POSITION_BITS);
        const pos = place - docNo * POSITION_BITS;
        const doc = docs[docNo];
        if (doc === undefined || !scopes.has(doc.scope)) return;
        // Already inside an overlap found on this diagonal.
        if (
          found.some(
            (f) =>
              f.docNo === docNo &&
              f.start - f.viewStart === pos - i &&
              f.viewStart <= i &&
              i < f.viewStart + (f.end - f.start),
          )
        )
          return;
        const text = doc.canonical.text;
        let left = 0;
        while (
          i - left > 0 &&
          pos - left > 0 &&
          view.charCodeAt(i - left - 1) === text.charCodeAt(pos - left - 1)
        )
          left++;
        let right = 0;
        while (
          i + right < view.length &&
          pos + right < text.length &&
          view.charCodeAt(i + right) === text.charCodeAt(pos + right)
        )
          right++;
        if (right < K) return; // a hash collision, not the k-gram
        found.push({
          key: doc.key,
          scope: doc.scope,
          label: doc.label,
          start: pos - left,
          end: pos + right,
          docNo,
          viewStart: i - left,
        });
      };
      for (let i = 0; i < hashes.length; i++) {
        const hash = hashes[i] as number;
        if (!hasBit(filter, hash)) continue;
        const at = places.get(hash);
        if (at === undefined) continue;
        if (typeof at === 'number') verify(i, at);
        else for (const place of at) verify(i, place);
      }
      return found.map(({ key, scope, label, start, end }) => ({ key, scope, label, start, end }));
    },
    excerpt(key, start, end, maxChars) {
      const docNo = byKey.get(key);
      const doc = docNo === undefined ? undefined : docs[docNo];
      if (doc === undefined) return '';
      const from = doc.canonical.originalOffset(start);
      const to = doc.canonical.originalOffset(Math.max(start, end - 1)) + 1;
      const original = doc.original.slice(from, to);
      return original.length > maxChars ? `${original.slice(0, maxChars)}…` : original;
    },
    get chars() {
      return chars;
    },
    get documents() {
      return byKey.size;
    },
  };
}
