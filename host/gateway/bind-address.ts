import { isIP } from 'node:net';

/** Normalizes an IPv6 literal (e.g. "0:0::0" → "::") by letting the URL parser canonicalize it. */
function canonicalIpv6(address: string): string {
  return new URL(`http://[${address}]/`).hostname.replace(/^\[|\]$/g, '');
}

function isUnspecified(address: string, family: 4 | 6): boolean {
  if (family === 4) return address.split('.')[0] === '0';
  const canonical = canonicalIpv6(address);
  return canonical === '::' || canonical === '::ffff:0:0';
}

/**
 * Checks the addresses the gateway is asked to bind. Only IP literals are accepted (a host name could
 * resolve to anything), and the wildcard addresses are refused: a gateway on 0.0.0.0 or :: is reachable
 * from the LAN. Returns the de-duplicated list; throws with an explanation otherwise.
 */
export function validateBindAddresses(addresses: readonly string[]): string[] {
  if (addresses.length === 0) {
    throw new Error(
      'gateway.listen needs at least one address (loopback and the Docker bridge gateway address)',
    );
  }
  const result: string[] = [];
  for (const raw of addresses) {
    const address = raw.trim().replace(/^\[|\]$/g, '');
    const family = isIP(address);
    if (family !== 4 && family !== 6) {
      throw new Error(
        `gateway cannot bind "${raw}": give an IP address such as 127.0.0.1 or 172.17.0.1, not a host name`,
      );
    }
    if (isUnspecified(address, family)) {
      throw new Error(
        `gateway refuses to bind "${raw}": a wildcard address exposes the LLM gateway to the whole network; ` +
          'bind loopback and the Docker bridge gateway address instead',
      );
    }
    if (!result.includes(address)) result.push(address);
  }
  return result;
}
