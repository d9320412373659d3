import { findDecodableBlobs } from './encoded-blobs.ts';
import { looksHandTyped } from './entropy.ts';
import type { Finding, Hit, SecretScanner } from './finding.ts';
import { createHeldSecretMatcher, type HeldSecretMatcher } from './held-matcher.ts';
import { findHighEntropyStrings } from './high-entropy.ts';
import { findKeywordAssignments, findPasswordArguments } from './keyword-assignments.ts';
import { isNotASecret } from './placeholders.ts';
import { findPrivateKeyBlocks } from './private-key.ts';
import { TOKEN_RULES } from './token-rules.ts';
import { findUrlCredentials } from './url-credentials.ts';
import { errorMessage } from '../../errors/error-message.ts';
import type { Logger } from '../../logging/logger.ts';

export type { Finding, SecretScanner } from './finding.ts';

export interface SecretScannerOptions {
  /** The real values the host holds; ones shorter than 8 characters are ignored (see held-matcher). */
  heldSecrets: readonly string[];
  logger?: Pick<Logger, 'warn'>;
}

/**
 * Decoded blobs are scanned again, and blobs inside those once more; text encoded three times over is
 * reported as unscanned.
 */
const MAX_DECODE_DEPTH = 2;

/**
 * How much a finding says, best first. Where findings overlap, a weaker one is dropped for a stronger
 * one (a `token = ghp_…` is a GitHub token, not also a keyword hit); findings of the same strength are
 * all kept unless they cover the same range.
 */
const Strength = { Held: 0, Format: 1, Context: 2, Entropy: 3, Decoded: 4 } as const;
type Strength = (typeof Strength)[keyof typeof Strength];

interface Ranked extends Hit {
  strength: Strength;
}

/** The span of a match's capture groups (the secret), or of the whole match when it has none. */
function secretRange(m: RegExpMatchArray): [number, number] {
  let start = Number.POSITIVE_INFINITY;
  let end = -1;
  for (const span of m.indices?.slice(1) ?? []) {
    if (!span) continue;
    start = Math.min(start, span[0]);
    end = Math.max(end, span[1]);
  }
  return end < 0 ? [m.index ?? 0, (m.index ?? 0) + m[0].length] : [start, end];
}

/**
 * Format findings per text at most: a text with more is full of secrets either way, and listing every
 * one of a hundred thousand tokens would only cost time.
 */
const MAX_TOKEN_FINDINGS = 1_000;

function findTokens(text: string): Hit[] {
  const hits: Hit[] = [];
  for (const rule of TOKEN_RULES) {
    if (hits.length >= MAX_TOKEN_FINDINGS) break;
    rule.pattern.lastIndex = 0;
    for (const m of text.matchAll(rule.pattern)) {
      if (hits.length >= MAX_TOKEN_FINDINGS) break;
      const [start, end] = secretRange(m);
      const secret = text.slice(start, end);
      if (isNotASecret(secret) || looksHandTyped(secret)) continue;
      if (rule.validate && !rule.validate(secret)) continue;
      hits.push({ rule: rule.rule, message: `found ${rule.what}`, start, end });
    }
  }
  return hits;
}

function findPrivateKeys(text: string): Hit[] {
  return findPrivateKeyBlocks(text).map((b) => ({
    rule: b.partial ? 'private-key/partial-block' : 'private-key/block',
    message: b.partial
      ? `found the start of a private key (${b.label}) with key material`
      : `found a private key block (${b.label})`,
    start: b.start,
    end: b.end,
  }));
}

function findHeld(held: HeldSecretMatcher, text: string): Hit[] {
  return held.find(text).map((m) => ({
    rule: `held-secret/${m.encoding}`,
    message: `a secret the host holds appears here (${m.encoding})`,
    start: m.start,
    end: m.end,
  }));
}

/**
 * Every detector on one text; decoded blobs are scanned again with their findings mapped to the blob
 * (held secrets too: gzip+base64 of a held key shows only once inflated).
 */
function detect(text: string, depth: number, held: HeldSecretMatcher): Ranked[] {
  const out: Ranked[] = [];
  const add = (hits: Hit[], strength: Strength) => {
    for (const h of hits) out.push({ ...h, strength });
  };
  add(findHeld(held, text), Strength.Held);
  add(findTokens(text), Strength.Format);
  add(findPrivateKeys(text), Strength.Format);
  add(findUrlCredentials(text), Strength.Context);
  add(findKeywordAssignments(text), Strength.Context);
  add(findPasswordArguments(text), Strength.Context);
  add(findHighEntropyStrings(text), Strength.Entropy);
  for (const blob of findDecodableBlobs(text)) {
    if (depth >= MAX_DECODE_DEPTH || blob.unread) {
      // Fails closed: text nested deeper than the scanner opens, or inflated past the cap, is reported,
      // not passed unread.
      out.push({
        rule: `${blob.encoding}/unscanned`,
        message: blob.unread
          ? `found ${blob.encoding} data that inflates past what the scanner reads`
          : `found ${blob.encoding} text nested deeper than the scanner decodes`,
        start: blob.start,
        end: blob.end,
        strength: Strength.Decoded,
      });
      continue;
    }
    const inner = detect(blob.text, depth + 1, held);
    const seen = new Set<string>();
    for (const f of inner) {
      if (f.strength === Strength.Entropy || seen.has(f.rule)) continue;
      seen.add(f.rule);
      out.push({
        rule: `${blob.encoding}/${f.rule}`,
        message: `${f.message}, ${blob.encoding}-encoded`,
        start: blob.start,
        end: blob.end,
        strength: Strength.Decoded,
      });
    }
  }
  return out;
}

/** Disjoint intervals sorted by start: does any overlap [start, end)? */
function overlapsAny(intervals: readonly [number, number][], start: number, end: number): boolean {
  let lo = 0;
  let hi = intervals.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((intervals[mid] as [number, number])[1] <= start) lo = mid + 1;
    else hi = mid;
  }
  const next = intervals[lo];
  return next !== undefined && next[0] < end;
}

/** The union of sorted intervals, merged into disjoint ones. */
function merge(intervals: [number, number][]): [number, number][] {
  intervals.sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const [s, e] of intervals) {
    const last = out[out.length - 1];
    if (last && s <= last[1]) last[1] = Math.max(last[1], e);
    else out.push([s, e]);
  }
  return out;
}

/**
 * Drops findings that overlap a stronger one, and repeats of the same range. In n log n, strength by
 * strength: a text stuffed with thousands of tokens must not make this quadratic.
 */
function rank(found: Ranked[]): Finding[] {
  found.sort((a, b) => a.strength - b.strength || a.start - b.start);
  const kept: Ranked[] = [];
  let stronger: [number, number][] = [];
  let i = 0;
  while (i < found.length) {
    const strength = (found[i] as Ranked).strength;
    const ranges = new Set<string>();
    const tier: Ranked[] = [];
    for (; i < found.length && (found[i] as Ranked).strength === strength; i++) {
      const f = found[i] as Ranked;
      const range = `${f.start}:${f.end}`;
      if (ranges.has(range) || overlapsAny(stronger, f.start, f.end)) continue;
      ranges.add(range);
      tier.push(f);
    }
    kept.push(...tier);
    stronger = merge([...stronger, ...tier.map((f): [number, number] => [f.start, f.end])]);
  }
  return kept
    .sort((a, b) => a.start - b.start || a.end - b.end)
    .map(({ rule, message, start, end }) => ({ rule, message, start, end }));
}

export function createSecretScanner(options: SecretScannerOptions): SecretScanner {
  const held = createHeldSecretMatcher(options.heldSecrets);

  function scanNow(text: string): Finding[] {
    return rank(detect(text, 0, held));
  }

  return {
    async scan(text) {
      try {
        return scanNow(text);
      } catch (err) {
        // Fails closed: a text the detectors could not check is reported as a finding, never as clean.
        const why = errorMessage(err);
        options.logger?.warn(
          { err: why },
          'secret scanner: detectors failed; reporting the text as a finding',
        );
        return [
          { rule: 'scanner/error', message: 'the detectors failed on this text', start: 0, end: text.length },
        ];
      }
    },
    redact: (text) => held.redact(text),
  };
}
