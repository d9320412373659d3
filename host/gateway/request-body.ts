import type { IncomingMessage } from 'node:http';

export type BodyResult = { ok: true; body: Buffer } | { ok: false; reason: 'too_large' | 'aborted' };

/**
 * Reads a request body up to `limit` bytes. A declared Content-Length over the limit is refused before
 * reading anything; a chunked body is cut off as soon as it crosses the limit.
 */
export function readBodyLimited(req: IncomingMessage, limit: number): Promise<BodyResult> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    // Let the rest arrive and be discarded so the client can read the 413 instead of a reset.
    req.resume();
    return Promise.resolve({ ok: false, reason: 'too_large' });
  }
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (result: BodyResult) => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onAbort);
      req.off('close', onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        parts.length = 0;
        req.resume();
        settle({ ok: false, reason: 'too_large' });
        return;
      }
      parts.push(chunk);
    };
    const onEnd = () => settle({ ok: true, body: Buffer.concat(parts, size) });
    const onAbort = () => settle({ ok: false, reason: 'aborted' });
    const onClose = () => {
      if (!req.complete) onAbort();
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAbort);
    req.on('close', onClose);
  });
}
