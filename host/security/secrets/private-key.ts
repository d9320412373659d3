/**
 * PEM and OpenSSH private-key blocks with real key material: any `… PRIVATE KEY` label (RSA, EC, DSA,
 * OPENSSH, ENCRYPTED, PGP … BLOCK), short bodies included (an Ed25519 PKCS#8 body is 64 characters), and
 * encrypted legacy PEM with `Proc-Type:`/`DEK-Info:` headers. A block counts when BEGIN and a matching END
 * enclose a plausible base64 body, so documentation with placeholder bodies ("MIIE...", "<your key>")
 * stays quiet. A BEGIN line without its END still counts when real key material follows it (a key cut
 * short, or pasted in part, still gives it away).
 */

const BEGIN = /-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----/g;
const END = /-----END ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----/g;
/** Longer BEGIN…END spans are not one key (the largest RSA keys are about 6,000 characters). */
const MAX_BLOCK_CHARS = 20_000;
const MIN_BODY_CHARS = 40;
/** Without an END, this much base64 right after BEGIN is key material (more than any placeholder). */
const MIN_PARTIAL_BODY_CHARS = 120;

export interface PrivateKeyBlock {
  start: number;
  end: number;
  /** The block's label, e.g. `OPENSSH PRIVATE KEY`; not secret. */
  label: string;
  /** True when no END marker closes it. */
  partial: boolean;
}

function bodyLines(raw: string): string[] {
  return (
    raw
      // Inside JSON strings the line breaks are written as \n or \r\n escapes.
      .replace(/\\r\\n|\\n|\\r/g, '\n')
      .split(/\r?\n/)
      .map((l) => l.trim())
      // Encryption headers (Proc-Type:, DEK-Info:), PGP armor headers, and the PGP checksum line.
      .filter((l) => l !== '' && !l.includes(':') && !/^=[A-Za-z0-9+/]{4}$/.test(l))
  );
}

function plausibleBody(raw: string): boolean {
  return new RegExp(`^[A-Za-z0-9+/]{${MIN_BODY_CHARS},}={0,2}$`).test(bodyLines(raw).join(''));
}

/** The length of the base64 body right after a BEGIN that has no END (its leading base64 lines). */
function partialBodyEnd(text: string, bodyStart: number): number | undefined {
  // JSON-escaped line breaks become real ones of the same length, so offsets stay true.
  const window = text
    .slice(bodyStart, bodyStart + 4000)
    .replace(/\\r\\n|\\n|\\r/g, (e) => '\n'.padEnd(e.length, ' '));
  const m =
    /^(?:[ \t]*(?:[A-Za-z-]+:[^\n]*)?\r?\n)*?((?:[ \t]*[A-Za-z0-9+/]{16,}={0,2}[ \t]*(?:\r?\n|$))+)/.exec(
      window,
    );
  if (!m) return undefined;
  const body = (m[1] as string).replace(/\s+/g, '');
  if (body.length < MIN_PARTIAL_BODY_CHARS) return undefined;
  return bodyStart + Math.min(m[0].length, text.length - bodyStart);
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
  const blocks: PrivateKeyBlock[] = [];
  for (const m of text.matchAll(BEGIN)) {
    const label = m[1] as string;
    const bodyStart = m.index + m[0].length;
    const endAt = firstAtOrAfter(ends.get(label) ?? [], bodyStart);
    if (endAt === undefined || endAt - m.index > MAX_BLOCK_CHARS) {
      const partialEnd = partialBodyEnd(text, bodyStart);
      if (partialEnd !== undefined) blocks.push({ start: m.index, end: partialEnd, label, partial: true });
      continue;
    }
    if (!plausibleBody(text.slice(bodyStart, endAt))) continue;
    blocks.push({ start: m.index, end: endAt + `-----END ${label}-----`.length, label, partial: false });
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
