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
 * Spread-out secrets are compared on a squeezed copy of the text (separators removed). Shorter squeezed
 * needles would match by chance in long texts, so they are left out (the exact needles still cover them).
 */
const MIN_SPREAD_NEEDLE = 12;

/**
 * What an agent may put between a secret's characters without changing what it gives away: whitespace
 * and control characters, " ' ` + , . / : ; | - _ ( ) [ ] { } \\ and %; escapes that stand for a line
 * break or tab as written in JSON (`\\n`, `\\r`, `\\t`); and byte prefixes in front of a hex pair
 * (`\\x41`, `0x41`).
 */
const SEPARATORS =
  /\\[nrt]|\\x(?=[0-9a-fA-F]{2})|(?<![0-9A-Za-z])0[xX](?=[0-9a-fA-F]{2})|[\s\p{Cc}"'`+,./:;|\-_()[\]{}\\%]+/gu;

/**
 * The text without separators. A native regex replace, because this runs over every scanned text;
 * the offsets back into the original are worked out only for a match (`originalOffset`).
 */
const squeeze = (text: string) => text.replace(SEPARATORS, '');

/** The offset in `text` of the character at `index` in `squeeze(text)`. */
function originalOffset(text: string, index: number): number {
  let kept = 0;
  let from = 0;
  for (const m of text.matchAll(SEPARATORS)) {
    if (kept + (m.index - from) > index) break;
    kept += m.index - from;
    from = m.index + m[0].length;
  }
  return from + (index - kept);
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
    for (const n of [
      { text: squeeze(secret), encoding: 'spread' },
      { text: Buffer.from(secret, 'utf8').toString('hex'), encoding: 'hex-spread' },
      { text: Buffer.from(secret, 'utf8').toString('hex').toUpperCase(), encoding: 'hex-spread' },
    ]) {
      if (n.text.length < MIN_SPREAD_NEEDLE || spreadSeen.has(n.text)) continue;
      spreadSeen.add(n.text);
      spreadNeedles.push(n);
    }
  }

  /** Spread-out matches, mapped back to the original text's offsets. */
  function spreadMatches(text: string): HeldSecretMatch[] {
    if (spreadNeedles.length === 0) return [];
    const squeezed = squeeze(text);
    const found: HeldSecretMatch[] = [];
    for (const needle of spreadNeedles) {
      let i = squeezed.indexOf(needle.text);
      while (i !== -1) {
        const start = originalOffset(text, i);
        const end = originalOffset(text, i + needle.text.length - 1) + 1;
        found.push({ start, end, encoding: needle.encoding });
        i = squeezed.indexOf(needle.text, i + 1);
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
