import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/**
 * Stops a body nobody will read. The listener matters: undici's body emits an "aborted" error when
 * destroyed before its end, which would otherwise be an uncaught exception.
 */
export function discardBody(body: Readable): void {
  body.on('error', () => undefined);
  body.destroy();
}

export interface CappedBody {
  bytes: Buffer;
  /** The body had more than `maxBytes` bytes; the rest was never read. */
  truncated: boolean;
}

const DECODERS: Record<string, () => NodeJS.ReadWriteStream & Readable> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/** True when `readCappedBody` can decode this Content-Encoding (absent and identity included). */
export function isSupportedEncoding(encoding: string | undefined): boolean {
  const value = (encoding ?? '').trim().toLowerCase();
  return value === '' || value === 'identity' || value in DECODERS;
}

/**
 * Reads at most `maxBytes` of the decoded body and then stops, destroying the stream, so neither a
 * huge page nor a decompression bomb is ever held in memory beyond the cap.
 */
export async function readCappedBody(
  body: Readable,
  encoding: string | undefined,
  maxBytes: number,
): Promise<CappedBody> {
  const value = (encoding ?? '').trim().toLowerCase();
  const makeDecoder = DECODERS[value];
  let source: Readable = body;
  if (makeDecoder) {
    const decoder = makeDecoder();
    body.on('error', (error) => decoder.destroy(error));
    body.pipe(decoder);
    source = decoder;
  }
  const chunks: Buffer[] = [];
  let total = 0;
  let truncated = false;
  try {
    for await (const chunk of source) {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      if (total + buffer.length > maxBytes) {
        chunks.push(buffer.subarray(0, maxBytes - total));
        total = maxBytes;
        truncated = true;
        break;
      }
      chunks.push(buffer);
      total += buffer.length;
    }
  } finally {
    discardBody(source);
    discardBody(body);
  }
  return { bytes: Buffer.concat(chunks, total), truncated };
}

/** Decodes with the charset the server named, falling back to UTF-8 for unknown or missing ones. */
export function decodeText(bytes: Buffer, charset: string | undefined): string {
  if (charset) {
    try {
      return new TextDecoder(charset).decode(bytes);
    } catch {
      // An unknown label: UTF-8 below is the web's default.
    }
  }
  return new TextDecoder('utf-8').decode(bytes);
}
