/**
 * The checksums providers build into their tokens. GitHub (2021 token format) and npm (2021 format) end
 * each token with the CRC32 of its 30 random characters, base62-encoded (`0-9A-Za-z`) and left-padded
 * with `0` to six characters. A look-alike with the right prefix and length but a wrong checksum is not a
 * token GitHub or npm ever issued.
 */
import zlib from 'node:zlib';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** CRC32 (IEEE) of an ASCII string. */
export function crc32(ascii: string): number {
  return zlib.crc32(ascii);
}

export function base62(n: number, width: number): string {
  let out = '';
  let rest = n;
  while (rest > 0) {
    out = BASE62[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out.padStart(width, '0');
}

/** `body` is the token after its prefix: 30 random characters then the 6-character checksum. */
export function hasBase62Crc32(body: string): boolean {
  if (body.length !== 36) return false;
  return base62(crc32(body.slice(0, 30)), 6) === body.slice(30);
}
