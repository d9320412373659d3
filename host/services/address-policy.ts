import { isIP } from 'node:net';

/** Decides whether an outgoing connection to `ip` must be refused. True means refuse. */
export type AddressPolicy = (ip: string) => boolean;

type Bytes = number[];

function parseIPv4(text: string): Bytes {
  return text.split('.').map(Number);
}

/** 16 bytes; only called on strings `net.isIP` accepted as IPv6 (zone id already removed). */
function parseIPv6(text: string): Bytes {
  const hextets = (part: string): number[] => {
    if (part === '') return [];
    const out: number[] = [];
    for (const group of part.split(':')) {
      if (group.includes('.')) {
        const [a = 0, b = 0, c = 0, d = 0] = parseIPv4(group);
        out.push((a << 8) | b, (c << 8) | d);
      } else {
        out.push(parseInt(group, 16));
      }
    }
    return out;
  };
  const gap = text.indexOf('::');
  let groups: number[];
  if (gap === -1) {
    groups = hextets(text);
  } else {
    const head = hextets(text.slice(0, gap));
    const tail = hextets(text.slice(gap + 2));
    groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  }
  return groups.flatMap((g) => [g >> 8, g & 0xff]);
}

/** A prefix `bits` long of `base` (written as an address) must match. */
interface Range {
  base: Bytes;
  bits: number;
}

function range(cidr: string): Range {
  const [address = '', bits = ''] = cidr.split('/');
  return { base: isIP(address) === 4 ? parseIPv4(address) : parseIPv6(address), bits: Number(bits) };
}

function inRange(bytes: Bytes, { base, bits }: Range): boolean {
  if (bytes.length !== base.length) return false;
  for (let i = 0; i < bits; i += 8) {
    const take = Math.min(8, bits - i);
    const mask = (0xff << (8 - take)) & 0xff;
    if (((bytes[i / 8] ?? 0) & mask) !== ((base[i / 8] ?? 0) & mask)) return false;
  }
  return true;
}

/**
 * IPv4 ranges that are not the public internet (IANA special-purpose registry, plus anything reserved).
 * Fetching these would reach the host, its LAN, a cloud metadata service or nothing sensible.
 */
const FORBIDDEN_V4: readonly Range[] = [
  '0.0.0.0/8', // "this network"; 0.0.0.0 connects to the local host on Linux
  '10.0.0.0/8', // private
  '100.64.0.0/10', // carrier-grade NAT
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local, incl. the cloud metadata service 169.254.169.254
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments (incl. NAT64 discovery)
  '192.0.2.0/24', // documentation TEST-NET-1
  '192.88.99.0/24', // deprecated 6to4 relay anycast
  '192.168.0.0/16', // private
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // documentation TEST-NET-2
  '203.0.113.0/24', // documentation TEST-NET-3
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, incl. broadcast 255.255.255.255
].map(range);

/** Only global unicast IPv6 (2000::/3) is ever allowed, minus these special-purpose blocks in it. */
const GLOBAL_UNICAST_V6 = range('2000::/3');
const FORBIDDEN_V6: readonly Range[] = [
  '2001::/23', // IETF protocol assignments: Teredo 2001::/32, benchmarking 2001:2::/48, ORCHID
  '2001:db8::/32', // documentation
  '3fff::/20', // documentation
].map(range);

/** IPv6 forms that carry an IPv4 address: the embedded address decides. */
const IPV4_MAPPED = range('::ffff:0:0/96');
const NAT64_WELL_KNOWN = range('64:ff9b::/96');
const SIX_TO_FOUR = range('2002::/16');

function forbiddenV4(bytes: Bytes): boolean {
  return FORBIDDEN_V4.some((r) => inRange(bytes, r));
}

function forbiddenV6(bytes: Bytes): boolean {
  if (inRange(bytes, IPV4_MAPPED) || inRange(bytes, NAT64_WELL_KNOWN)) return forbiddenV4(bytes.slice(12));
  // Outside global unicast lie ::, ::1, IPv4-compatible, ULA fc00::/7, link-local fe80::/10,
  // site-local, multicast ff00::/8, discard-only 100::/64, local-use NAT64 64:ff9b:1::/48 …
  if (!inRange(bytes, GLOBAL_UNICAST_V6)) return true;
  if (FORBIDDEN_V6.some((r) => inRange(bytes, r))) return true;
  if (inRange(bytes, SIX_TO_FOUR)) return forbiddenV4(bytes.slice(2, 6));
  return false;
}

/**
 * True when web_fetch must not connect to `ip`. Only canonical addresses as `net.isIP` reads them are
 * judged; anything else (decimal, hex or octal IPv4 forms, garbage) is refused, so callers normalise
 * URL hosts with `new URL()` first, as `literalAddress` does.
 */
export function isForbiddenAddress(ip: string): boolean {
  const zone = ip.indexOf('%');
  const address = zone === -1 ? ip : ip.slice(0, zone);
  const version = isIP(address);
  if (version === 4) return forbiddenV4(parseIPv4(address));
  if (version === 6) return forbiddenV6(parseIPv6(address));
  return true;
}

/**
 * The IP address a URL's host names literally, or undefined for a DNS name. WHATWG URL parsing has
 * already turned forms like `2130706433`, `0x7f.1` or `0177.0.0.1` into `127.0.0.1`.
 */
export function literalAddress(url: URL): string | undefined {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) === 0 ? undefined : host;
}
