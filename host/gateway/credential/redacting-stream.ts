import { Transform } from 'node:stream';

const REDACTED = Buffer.from('[redacted]');

function replaceAll(data: Buffer, secrets: readonly Buffer[]): Buffer {
  let out = data;
  for (const secret of secrets) {
    let at = out.indexOf(secret);
    if (at === -1) continue;
    const parts: Buffer[] = [];
    let from = 0;
    while (at !== -1) {
      parts.push(out.subarray(from, at), REDACTED);
      from = at + secret.length;
      at = out.indexOf(secret, from);
    }
    parts.push(out.subarray(from));
    out = Buffer.concat(parts);
  }
  return out;
}

/** Every spelling of the secret an upstream might echo: the value and the header the host sent. */
export function redactionsFor(values: readonly string[]): Buffer[] {
  return [...new Set(values.filter((v) => v.length >= 4))]
    .sort((a, b) => b.length - a.length)
    .map((v) => Buffer.from(v));
}

/** Replaces the secrets in a string (headers, error texts). */
export function redactText(text: string, secrets: readonly Buffer[]): string {
  return replaceAll(Buffer.from(text), secrets).toString();
}

/**
 * Passes a body through with every secret replaced by `[redacted]`, also one split across chunks: the
 * last (longest secret − 1) bytes of each chunk wait for the next one. Memory stays at one chunk plus
 * that tail, whatever the body's size.
 */
export function createRedactingStream(secrets: readonly Buffer[]): Transform {
  const hold = Math.max(0, ...secrets.map((s) => s.length - 1));
  let tail = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const data = replaceAll(tail.length === 0 ? chunk : Buffer.concat([tail, chunk]), secrets);
      const cut = Math.max(0, data.length - hold);
      tail = Buffer.from(data.subarray(cut));
      done(null, cut > 0 ? data.subarray(0, cut) : undefined);
    },
    flush(done) {
      done(null, tail.length > 0 ? tail : undefined);
    },
  });
}
