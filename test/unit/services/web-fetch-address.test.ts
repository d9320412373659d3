import { describe, expect, it } from 'vitest';
import { isForbiddenAddress, literalAddress } from '../../../host/services/address-policy.ts';

const FORBIDDEN: [string, string][] = [
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback, end of 127/8'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', '"this network" 0/8'],
  ['10.0.0.1', 'private 10/8'],
  ['10.255.255.255', 'private 10/8, last'],
  ['172.16.0.1', 'private 172.16/12, first'],
  ['172.31.255.255', 'private 172.16/12, last'],
  ['192.168.1.1', 'private 192.168/16'],
  ['169.254.169.254', 'cloud metadata'],
  ['169.254.0.1', 'link-local'],
  ['100.64.0.1', 'CGNAT, first'],
  ['100.127.255.255', 'CGNAT, last'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast SSDP'],
  ['255.255.255.255', 'broadcast'],
  ['240.0.0.1', 'reserved 240/4'],
  ['198.18.0.1', 'benchmarking 198.18/15'],
  ['198.19.255.255', 'benchmarking 198.18/15, last'],
  ['192.0.2.1', 'TEST-NET-1'],
  ['198.51.100.7', 'TEST-NET-2'],
  ['203.0.113.9', 'TEST-NET-3'],
  ['192.0.0.170', 'NAT64 discovery in 192.0.0/24'],
  ['192.88.99.1', '6to4 relay anycast'],
  ['::1', 'IPv6 loopback'],
  ['::', 'IPv6 unspecified'],
  ['0:0:0:0:0:0:0:1', 'IPv6 loopback, uncompressed'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback, dotted'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
  ['0:0:0:0:0:ffff:a9fe:a9fe', 'IPv4-mapped metadata address'],
  ['::ffff:10.1.2.3', 'IPv4-mapped private'],
  ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
  ['64:ff9b::127.0.0.1', 'NAT64 of loopback'],
  ['64:ff9b::a9fe:a9fe', 'NAT64 of the metadata address'],
  ['64:ff9b:1::8.8.8.8', 'local-use NAT64'],
  ['fc00::1', 'unique local fc00::/7'],
  ['fd12:3456:789a::1', 'unique local fd00::/8'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local with a zone'],
  ['febf:ffff::1', 'link-local, end of fe80::/10'],
  ['fec0::1', 'deprecated site-local'],
  ['ff02::1', 'multicast'],
  ['ff05::1:3', 'multicast, site-local scope'],
  ['2001:db8::1', 'documentation'],
  ['3fff::1', 'documentation 3fff::/20'],
  ['2001::1', 'Teredo'],
  ['2001:2::1', 'benchmarking'],
  ['2002:7f00:1::1', '6to4 of loopback'],
  ['2002:c0a8:101::1', '6to4 of 192.168.1.1'],
  ['100::1', 'discard-only'],
  // Not canonical: refused rather than guessed at. URL hosts are normalised before they get here.
  ['2130706433', 'decimal IPv4, not normalised'],
  ['0x7f.1', 'hex IPv4, not normalised'],
  ['0177.0.0.1', 'octal IPv4, not normalised'],
  ['127.1', 'short IPv4, not normalised'],
  ['localhost', 'a name, not an address'],
  ['', 'empty'],
  ['[::1]', 'bracketed'],
];

const ALLOWED: [string, string][] = [
  ['8.8.8.8', 'public IPv4'],
  ['1.1.1.1', 'public IPv4'],
  ['93.184.215.14', 'public IPv4'],
  ['172.15.255.255', 'just below 172.16/12'],
  ['172.32.0.1', 'just above 172.16/12'],
  ['100.63.255.255', 'just below CGNAT'],
  ['100.128.0.1', 'just above CGNAT'],
  ['198.17.255.255', 'just below 198.18/15'],
  ['198.20.0.1', 'just above 198.18/15'],
  ['169.253.255.255', 'just below link-local'],
  ['223.255.255.255', 'just below multicast'],
  ['11.0.0.1', 'just above 10/8'],
  ['2606:4700:4700::1111', 'public IPv6'],
  ['2a00:1450:4001:80b::200e', 'public IPv6'],
  ['::ffff:8.8.8.8', 'IPv4-mapped public'],
  ['64:ff9b::808:808', 'NAT64 of a public address'],
  ['2002:808:808::1', '6to4 of a public address'],
  ['2001:4860:4860::8888', 'public, outside 2001::/23'],
];

describe('isForbiddenAddress', () => {
  it.each(FORBIDDEN)('refuses %s (%s)', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each(ALLOWED)('allows %s (%s)', (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });
});

describe('literalAddress after URL normalisation', () => {
  const cases: [string, string | undefined][] = [
    ['http://2130706433/', '127.0.0.1'],
    ['http://0x7f.1/', '127.0.0.1'],
    ['http://0177.0.0.1/', '127.0.0.1'],
    ['http://017700000001/', '127.0.0.1'],
    ['http://127.1/', '127.0.0.1'],
    ['http://127.0.0.1./', '127.0.0.1'],
    ['http://0xa9.0xfe.0xa9.0xfe/', '169.254.169.254'],
    ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1'],
    ['http://[0:0:0:0:0:0:0:1]:8080/', '::1'],
    ['https://example.com/', undefined],
    ['http://localhost/', undefined],
  ];

  it.each(cases)('%s names %s', (raw, expected) => {
    expect(literalAddress(new URL(raw))).toBe(expected);
  });

  it.each(cases.filter(([, address]) => address !== undefined))('%s is refused once normalised', (raw) => {
    expect(isForbiddenAddress(literalAddress(new URL(raw)) ?? '')).toBe(true);
  });
});
