/**
 * PEM private-key blocks that secretlint's privatekey rule (v11) lets through: it wants a base64 body of
 * at least 100 characters starting with "MI", so Ed25519 keys (PKCS#8 body "MC4…", 64 characters), P-256
 * keys in SEC1 form ("MHc…"), and encrypted legacy PEM (with `Proc-Type:`/`DEK-Info:` headers) are missed.
 * Here a block counts when BEGIN and a matching END enclose a plausible base64 body, so documentation
 * with placeholder bodies ("MIIE...", "<your key>") stays quiet.
 */

const BEGIN = /-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----/g;
const END = /-----END ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----/g;
/** Longer BEGIN…END spans are not one key (the largest RSA keys are about 6,000 characters). */
const MAX_BLOCK_CHARS = 20_000;
const MIN_BODY_CHARS = 40;

export interface PrivateKeyBlock {
  start: number;
  end: number;
  /** The block's label, e.g. `OPENSSH PRIVATE KEY`; not secret. */
  label: string;
}

function plausibleBody(raw: string): boolean {
  const lines = raw
    // Inside JSON strings the line breaks are written as \n or \r\n escapes.
    .replace(/\\r\\n|\\n|\\r/g, '\n')
    .split(/\r?\n/)
    .map((l) => l.trim())
    // Encryption headers (Proc-Type:, DEK-Info:), PGP armor headers, and the PGP checksum line.
    .filter((l) => l !== '' && !l.includes(':') && !/^=[A-Za-z0-9+/]{4}$/.test(l));
  return new RegExp(`^[A-Za-z0-9+/]{${MIN_BODY_CHARS},}={0,2}$`).test(lines.join(''));
}

export function findPrivateKeyBlocks(text: string): PrivateKeyBlock[] {
  if (!text.includes('PRIVATE KEY')) return [];
  // Every END marker's position by label, found in one pass, so that many BEGIN lines without an END
  // cost linear time rather than one search to the end of the text each.
  const ends = new Map<string, number[]>();
  for (const m of text.matchAll(END)) {
    const label = m[1] as string;
    const list = ends.get(label) ?? [];
    list.push(m.index);
    ends.set(label, list);
  }
  if (ends.size === 0) return [];
  const blocks: PrivateKeyBlock[] = [];
  for (const m of text.matchAll(BEGIN)) {
    const label = m[1] as string;
    const bodyStart = m.index + m[0].length;
    const endAt = firstAtOrAfter(ends.get(label) ?? [], bodyStart);
    if (endAt === undefined || endAt - m.index > MAX_BLOCK_CHARS) continue;
    if (!plausibleBody(text.slice(bodyStart, endAt))) continue;
    blocks.push({ start: m.index, end: endAt + `-----END ${label}-----`.length, label });
  }
  return blocks;
}

function firstAtOrAfter(sorted: number[], at: number): number | undefined {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as number) < at) lo = mid + 1;
    else hi = mid;
  }
  return sorted[lo];
}
