import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { Agent } from 'undici';

export interface VettedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * An undici dispatcher that can only reach `addresses` for `hostname`: its DNS lookup answers from the
 * addresses already checked instead of asking DNS again, so a rebinding resolver gets no second chance
 * between the check and the connect. The URL keeps the host name, so Host and TLS SNI stay correct.
 * IP-literal URLs never call lookup; they connect to the literal that was checked.
 */
export function createPinnedAgent(
  hostname: string,
  addresses: readonly VettedAddress[],
  connectTimeoutMs: number,
): Agent {
  const lookup = ((requested: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    const first = addresses[0];
    if (requested !== hostname || !first) {
      callback(
        Object.assign(new Error(`refusing to resolve "${requested}": only "${hostname}" was checked`), {
          code: 'ENOTFOUND',
        }),
      );
      return;
    }
    if (options.all)
      callback(
        null,
        addresses.map((a): LookupAddress => ({ address: a.address, family: a.family })),
      );
    else callback(null, first.address, first.family);
  }) as unknown as LookupFunction;
  return new Agent({
    connect: { lookup, timeout: connectTimeoutMs },
    // One request per hop: no connection is kept for anything else to reuse.
    pipelining: 0,
    connections: 1,
  });
}
