import { MediaTooLargeError } from './channel.ts';

/**
 * Reads a download into memory, at most `maxBytes` of it: past that it stops reading (the caller's abort
 * then cuts the connection) and throws MediaTooLargeError, so a file that lied about its size costs one
 * cap of memory, never more. Shared by the adapters whose platforms hand out byte streams.
 */
export async function readWithin(
  chunks: AsyncIterable<Uint8Array>,
  maxBytes: number,
  expectedBytes?: number,
): Promise<Uint8Array> {
  if (expectedBytes !== undefined && expectedBytes > maxBytes) throw new MediaTooLargeError(maxBytes);
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of chunks) {
    total += chunk.byteLength;
    if (total > maxBytes) throw new MediaTooLargeError(maxBytes);
    parts.push(chunk);
  }
  if (expectedBytes !== undefined && total !== expectedBytes)
    throw new Error(`the download was cut short (${total} of ${expectedBytes} bytes)`);
  return Buffer.concat(parts);
}
