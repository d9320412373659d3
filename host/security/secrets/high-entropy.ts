import { charClasses, shannonEntropy } from './entropy.ts';
import type { Hit } from './finding.ts';
import { isNotASecret } from './placeholders.ts';

/**
 * detect-secrets' Base64HighEntropyString, narrowed: a quoted string of 20-120 base64 characters with
 * at least 4.5 bits of entropy per character (its default limit), mixing upper case, lower case and
 * digits. Narrowed, because on its own terms it flags every digest and id in a message: strings named
 * like an id, hash, digest, checksum, nonce or signature are skipped, as are SRI hashes (`sha512-…`)
 * and base58 strings (crypto addresses, IPFS ids).
 * Bare hex strings are never reported here (a hex key and a SHA-256 look the same); hex values are judged
 * by the keyword detector, where the name says what they are.
 */

const QUOTED = /(\\?["'`])([A-Za-z0-9+/_-]{20,120}={0,2})\1/g;
const ABOUT_SOMETHING_ELSE =
  /(?:^|[^a-z])(?:id|ids|uuid|guid|hash|sha\d*|md5|digest|checksum|integrity|etag|nonce|salt|iv|signature|sig|fingerprint|commit|rev|revision|version|ref|cursor|trace|span|image|blob|cid|msgid|ref|path|url|src|href|name|slug|thumbprint)(?:$|[^a-z])/i;

export function findHighEntropyStrings(text: string): Hit[] {
  const hits: Hit[] = [];
  if (!text.includes('"') && !text.includes("'") && !text.includes('`')) return hits;
  for (const m of text.matchAll(QUOTED)) {
    const value = m[2] as string;
    const c = charClasses(value);
    if (!(c.lower && c.upper && c.digit)) continue;
    if (shannonEntropy(value) < 4.5) continue;
    if (/^sha(?:1|256|384|512)-/.test(value) || isNotASecret(value)) continue;
    // Base58 only (no 0 O I l + / - _ =): crypto addresses and IPFS ids, which are public. A random
    // base64 key of 32+ characters avoids those eight characters with a chance of about 2 %.
    if (/^[1-9A-HJ-NP-Za-km-z]+$/.test(value)) continue;
    // What the value is named or said to be, just before it on its line.
    const before = text.slice(Math.max(0, m.index - 40), m.index);
    const context = before.slice(before.lastIndexOf('\n') + 1).replace(/([a-z])([A-Z])/g, '$1_$2');
    if (ABOUT_SOMETHING_ELSE.test(context)) continue;
    const start = m.index + (m[1] as string).length;
    hits.push({
      rule: 'high-entropy/base64',
      message: 'found a quoted high-entropy base64 string',
      start,
      end: start + value.length,
    });
  }
  return hits;
}
