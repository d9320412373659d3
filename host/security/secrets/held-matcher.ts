import { canonical, canonicalText } from './canonical-text.ts';

/**
 * Matching of the secrets the host holds (provider API keys, bot tokens), in the encodings a leaking
 * agent is most likely to produce: raw, base64 (also inside a longer blob), base64url, URL- and
 * JSON-escaped, hex. Exact matching is synchronous and allocation-free when nothing matches, because
 * `redact` runs on every log line and audit row. `find` also matches the secret under any spelling, on
 * the canonical form of the text (canonical-text.ts: case folded, look-alike letters mapped, separators,
 * format characters and combining marks removed): spread out (split across lines, concatenated,
 * `s k - l i v e …`, zero-width spaces between characters), reversed, ROT13, base32, base64 and hex
 * (also line-wrapped or `73:6b:2d…`, `\x73\x6b`), and as a list of character codes (`115, 107, 45…`).
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
   * `spread` (raw with separators, line breaks, format characters or marks inserted, or with its case or
   * letters' script changed), `reversed`, `rot13`, `base32`, `base64-spread`, `hex-spread` or
   * `char-codes`.
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
    const core = encodedCore((b) => b.toString('base64'), 6, bytes, offset);
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
 * Canonical needles shorter than this would match by chance in long texts, so they are left out (the
 * exact needles still cover them).
 */
const MIN_SPREAD_NEEDLE = 12;

const BASE32_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/** RFC 4648 base32 without padding, in lower case (matching is case-folded). */
function base32(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32_ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return bits > 0 ? out + BASE32_ALPHABET[(value << (5 - bits)) & 31] : out;
}

/**
 * The characters of an encoding of (prefix + secret + suffix) that depend only on the secret, for a
 * secret that starts `offset` bytes into the encoded data: those whose bits all fall inside the secret.
 */
function encodedCore(
  encode: (b: Buffer) => string,
  bitsPerChar: number,
  secret: Buffer,
  offset: number,
): string {
  const encoded = encode(Buffer.concat([Buffer.alloc(offset), secret]));
  const first = Math.ceil((offset * 8) / bitsPerChar);
  const last = Math.floor(((offset + secret.length) * 8) / bitsPerChar);
  return encoded.slice(first, last);
}

const rot13 = (text: string) =>
  text.replace(/[a-z]/g, (c) => String.fromCharCode(((c.charCodeAt(0) - 97 + 13) % 26) + 97));

/** The secret in every spelling `find` undoes, each in canonical form. */
function canonicalNeedlesFor(secret: string): Needle[] {
  const bytes = Buffer.from(secret, 'utf8');
  const spelled = canonical(secret);
  const needles: Needle[] = [
    { text: spelled, encoding: 'spread' },
    { text: [...spelled].reverse().join(''), encoding: 'reversed' },
    { text: rot13(spelled), encoding: 'rot13' },
    { text: bytes.toString('hex'), encoding: 'hex-spread' },
    { text: [...bytes].join(''), encoding: 'char-codes' },
  ];
  for (let offset = 0; offset < 5; offset++) {
    needles.push({ text: encodedCore(base32, 5, bytes, offset), encoding: 'base32' });
  }
  for (let offset = 0; offset < 3; offset++) {
    const core = encodedCore((b) => b.toString('base64'), 6, bytes, offset);
    needles.push({ text: canonical(core), encoding: 'base64-spread' });
  }
  return needles;
}

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
    for (const n of canonicalNeedlesFor(secret)) {
      if (n.text.length < MIN_SPREAD_NEEDLE || spreadSeen.has(n.text)) continue;
      spreadSeen.add(n.text);
      spreadNeedles.push(n);
    }
  }

  /** Matches on the canonical form, mapped back to the original text's offsets. */
  function spreadMatches(text: string): HeldSecretMatch[] {
    if (spreadNeedles.length === 0) return [];
    const folded = canonicalText(text);
    const found: HeldSecretMatch[] = [];
    for (const needle of spreadNeedles) {
      let i = folded.text.indexOf(needle.text);
      while (i !== -1) {
        const start = folded.originalOffset(i);
        const end = folded.originalOffset(i + needle.text.length - 1) + 1;
        found.push({ start, end, encoding: needle.encoding });
        i = folded.text.indexOf(needle.text, i + 1);
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
