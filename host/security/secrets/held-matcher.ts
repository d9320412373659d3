/**
 * Matching of the secrets the host holds (provider API keys, bot tokens), in the encodings a leaking
 * agent is most likely to produce: raw, base64 (also inside a longer blob), base64url, URL- and
 * JSON-escaped, hex. Exact matching is synchronous and allocation-free when nothing matches, because
 * `redact` runs on every log line and audit row. `find` also matches a secret (raw or hex) spread out:
 * split across lines, string concatenations or JSON-escaped line breaks, or with separators between its
 * characters (`s k - l i v e …`, `73:6b:2d…`, `\x73\x6b`).
 */

/**
 * Held secrets shorter than this are ignored. A short value ("admin", a port, "true") occurs in ordinary
 * text, so matching it would flag and mangle harmless messages; its base64 fragments (2-6 characters)
 * would also match inside unrelated base64 data. Real API keys and bot tokens are far longer.
 */
export const MIN_HELD_SECRET_LENGTH = 8;

export const REDACTED = '[REDACTED]';

export interface HeldSecretMatch {
  start: number;
  end: number;
  /**
   * How the secret was written: `raw`, `base64`, `base64url`, `url-encoded`, `json-escaped`, `hex`,
   * `spread` (raw with separators or line breaks inserted) or `hex-spread`.
   */
  encoding: string;
}

interface Needle {
  text: string;
  encoding: string;
}

export interface HeldSecretMatcher {
  /** Every place a held secret appears, left to right; a match inside a longer one is dropped. */
  find(text: string): HeldSecretMatch[];
  /** `text` with every match replaced by `[REDACTED]`; the same string when nothing matched. */
  redact(text: string): string;
  /** How many distinct secrets are matched (after dropping short ones). */
  readonly secretCount: number;
}

const toUrlSafe = (b64: string) => b64.replace(/\+/g, '-').replace(/\//g, '_');

/**
 * The part of base64(prefix + secret + suffix) that depends only on the secret, for a secret that starts
 * `offset` bytes (mod 3) into the encoded data. A secret embedded in a longer blob is encoded at one of
 * the three byte alignments; the first characters of its group mix in the preceding bytes (none, 2 or 3
 * characters for offsets 0, 1, 2) and the last character of a partial group mixes in the following byte.
 */
function base64Core(secret: Buffer, offset: 0 | 1 | 2): string {
  const padded = Buffer.concat([Buffer.alloc(offset), secret]);
  const encoded = padded.toString('base64').replace(/=+$/, '');
  const skipStart = [0, 2, 3][offset] as number;
  const skipEnd = padded.length % 3 === 0 ? 0 : 1;
  return encoded.slice(skipStart, encoded.length - skipEnd);
}

function needlesFor(secret: string): Needle[] {
  const bytes = Buffer.from(secret, 'utf8');
  const urlEncoded = encodeURIComponent(secret);
  const needles: Needle[] = [
    { text: secret, encoding: 'raw' },
    { text: urlEncoded, encoding: 'url-encoded' },
    // Some encoders write percent escapes in lower case (%2f); encodeURIComponent writes upper case.
    { text: urlEncoded.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()), encoding: 'url-encoded' },
    // Log lines are JSON: a secret holding `"` or `\` appears escaped there.
    { text: JSON.stringify(secret).slice(1, -1), encoding: 'json-escaped' },
    { text: bytes.toString('base64'), encoding: 'base64' },
    { text: bytes.toString('base64url'), encoding: 'base64url' },
    { text: bytes.toString('hex'), encoding: 'hex' },
    { text: bytes.toString('hex').toUpperCase(), encoding: 'hex' },
  ];
  for (const offset of [0, 1, 2] as const) {
    const core = base64Core(bytes, offset);
    needles.push({ text: core, encoding: 'base64' }, { text: toUrlSafe(core), encoding: 'base64url' });
  }
  const seen = new Set<string>();
  return needles.filter((n) => {
    if (n.text.length < MIN_HELD_SECRET_LENGTH || seen.has(n.text)) return false;
    seen.add(n.text);
    return true;
  });
}

/**
 * Needles for the spread-out match are compared on a squeezed copy of the text: lower case, without
 * separators. Shorter squeezed needles would match by chance in long texts, so they are left out (the
 * exact needles still cover those secrets).
 */
const MIN_SPREAD_NEEDLE = 12;

/**
 * Characters an agent may put between a secret's characters without changing what it gives away:
 * control characters and space, and " ' ` + , . / : ; | - _ ( ) [ ] { } \\ (a lookup table: this runs
 * once per character of every scanned text).
 */
const SEPARATORS: Uint8Array = (() => {
  const table = new Uint8Array(128);
  for (let c = 0; c <= 0x20; c++) table[c] = 1;
  for (const ch of `"'\`+,./:;|-_()[]{}\\`) table[ch.charCodeAt(0)] = 1;
  return table;
})();

const isSeparator = (c: number) => c < 128 && SEPARATORS[c] === 1;

/**
 * The text without separators, lower-cased, as bytes (held secrets are matched spread out only when they
 * are ASCII; any other character becomes 0xff, which no needle holds), with each kept byte's offset in the
 * original. Escapes that stand for a separator (`\\n`, `\\r`, `\\t` as written in JSON) and byte prefixes
 * in front of a hex pair (`\\x`, `0x`, `%`) are dropped too. Bytes rather than a string, so that
 * Buffer.indexOf (native) does the searching.
 */
function squeeze(text: string): { bytes: Buffer; at: Int32Array } {
  const at = new Int32Array(text.length);
  const out = Buffer.allocUnsafe(text.length);
  let n = 0;
  const isHex = (i: number) => {
    const c = text.charCodeAt(i) | 0x20;
    return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66);
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) {
      const next = text.charCodeAt(i + 1);
      if (
        next === 0x6e ||
        next === 0x72 ||
        next === 0x74 ||
        (next === 0x78 && isHex(i + 2) && isHex(i + 3))
      ) {
        i++;
      }
      continue;
    }
    if (c === 0x30 && (text.charCodeAt(i + 1) | 0x20) === 0x78 && isHex(i + 2) && isHex(i + 3)) {
      if (i === 0 || isSeparator(text.charCodeAt(i - 1))) {
        i++;
        continue;
      }
    }
    if (isSeparator(c) || c === 0x25) continue;
    out[n] = c >= 0x80 ? 0xff : c >= 0x41 && c <= 0x5a ? c | 0x20 : c;
    at[n++] = i;
  }
  return { bytes: out.subarray(0, n), at };
}

const isAscii = (s: string) => Buffer.byteLength(s, 'utf8') === s.length;

const squeezeNeedle = (s: string) => squeeze(s).bytes.toString('latin1');

export function createHeldSecretMatcher(heldSecrets: readonly string[]): HeldSecretMatcher {
  const secrets = [...new Set(heldSecrets.filter((s) => s.length >= MIN_HELD_SECRET_LENGTH))];
  const seen = new Set<string>();
  const needles: Needle[] = [];
  for (const secret of secrets) {
    for (const n of needlesFor(secret)) {
      if (seen.has(n.text)) continue;
      seen.add(n.text);
      needles.push(n);
    }
  }

  const spreadNeedles: Needle[] = [];
  const spreadSeen = new Set<string>();
  for (const secret of secrets) {
    for (const n of [
      { text: squeezeNeedle(secret), encoding: 'spread' },
      { text: Buffer.from(secret, 'utf8').toString('hex'), encoding: 'hex-spread' },
    ]) {
      if (n.text.length < MIN_SPREAD_NEEDLE || spreadSeen.has(n.text) || !isAscii(n.text)) continue;
      spreadSeen.add(n.text);
      spreadNeedles.push(n);
    }
  }

  /** Spread-out matches, mapped back to the original text's offsets. */
  function spreadMatches(text: string): HeldSecretMatch[] {
    if (spreadNeedles.length === 0) return [];
    const { bytes, at } = squeeze(text);
    const found: HeldSecretMatch[] = [];
    for (const needle of spreadNeedles) {
      let i = bytes.indexOf(needle.text, 0, 'latin1');
      while (i !== -1) {
        const start = at[i] as number;
        const end = (at[i + needle.text.length - 1] as number) + 1;
        found.push({ start, end, encoding: needle.encoding });
        i = bytes.indexOf(needle.text, i + 1, 'latin1');
      }
    }
    return found;
  }

  function rawMatches(text: string): HeldSecretMatch[] {
    let found: HeldSecretMatch[] | undefined;
    for (const needle of needles) {
      let at = text.indexOf(needle.text);
      while (at !== -1) {
        (found ??= []).push({ start: at, end: at + needle.text.length, encoding: needle.encoding });
        at = text.indexOf(needle.text, at + 1);
      }
    }
    return found ?? [];
  }

  return {
    secretCount: secrets.length,
    find(text) {
      const exact = rawMatches(text);
      // A spread match where an exact one already is adds nothing; elsewhere it is the only sign.
      const matches = exact.concat(
        spreadMatches(text).filter((s) => !exact.some((e) => e.start < s.end && s.start < e.end)),
      );
      if (matches.length === 0) return matches;
      // Longest first at each start, so the padded base64 wins over its own unpadded core.
      matches.sort((a, b) => a.start - b.start || b.end - a.end);
      const kept: HeldSecretMatch[] = [];
      let coveredTo = -1;
      for (const m of matches) {
        if (m.end <= coveredTo) continue;
        kept.push(m);
        coveredTo = m.end;
      }
      return kept;
    },
    redact(text) {
      const matches = rawMatches(text);
      if (matches.length === 0) return text;
      matches.sort((a, b) => a.start - b.start);
      let out = '';
      let copiedTo = 0;
      let i = 0;
      while (i < matches.length) {
        const start = (matches[i] as HeldSecretMatch).start;
        let end = (matches[i] as HeldSecretMatch).end;
        // Merge overlapping and touching matches into one marker.
        while (i + 1 < matches.length && (matches[i + 1] as HeldSecretMatch).start <= end) {
          end = Math.max(end, (matches[i + 1] as HeldSecretMatch).end);
          i++;
        }
        out += text.slice(copiedTo, start) + REDACTED;
        copiedTo = end;
        i++;
      }
      return out + text.slice(copiedTo);
    },
  };
}
