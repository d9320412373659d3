import type { SecretScanner } from './finding.ts';

/**
 * `text` with held secrets and everything the scanner finds replaced by [REDACTED], for text shown to an
 * agent (config.toml keeps secrets in .env, but a hand-written URL may carry a password). Findings are
 * replaced from the end so earlier offsets stay valid; overlapping ones merge.
 */
export async function redactFindings(text: string, scanner: SecretScanner): Promise<string> {
  const findings = await scanner.scan(text);
  let out = text;
  let cut = Infinity;
  for (const f of [...findings].sort((a, b) => b.start - a.start)) {
    const end = Math.min(f.end, cut);
    if (end <= f.start) continue;
    out = `${out.slice(0, f.start)}[REDACTED]${out.slice(end)}`;
    cut = f.start;
  }
  return scanner.redact(out);
}
