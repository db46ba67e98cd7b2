import { BlockList, isIP } from 'node:net';

/**
 * IPv4 ranges that are not the public internet (RFC 6890 and friends): this network, private, shared (CGNAT),
 * loopback, link-local (cloud metadata at 169.254.169.254), IETF and documentation nets, 6to4 relay, benchmarking,
 * multicast, reserved and broadcast.
 */
const notPublicIpv4: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];

/**
 * IPv6 ranges inside global unicast (2000::/3) that are still not somewhere to send a request: IETF protocol
 * assignments (Teredo among them), documentation. Everything outside 2000::/3 (loopback, unspecified, link-local,
 * unique-local, site-local, multicast, discard) is refused without a list; embedded IPv4 is checked as IPv4.
 */
const notPublicIpv6: [string, number][] = [
  ['2001::', 23],
  ['2001:db8::', 32],
  ['3fff::', 20],
];

const blocked = new BlockList();
for (const [network, prefix] of notPublicIpv4) blocked.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of notPublicIpv6) blocked.addSubnet(network, prefix, 'ipv6');

/**
 * Whether an IP address is one a request chosen by outside text (a mail, a web page, a model) may go to: a public
 * unicast address, not loopback, private, link-local, unique-local, CGNAT, unspecified, multicast or reserved, also
 * when the IPv4 address hides inside an IPv6 one (IPv4-mapped `::ffff:127.0.0.1`, IPv4-translated, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`). Anything
 * that is not an IP address is not public.
 */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !blocked.check(address, 'ipv4');
  if (family !== 6) return false;
  const words = ipv6Words(address);
  if (!words) return false;
  const embedded = embeddedIpv4(words);
  if (embedded !== undefined) return isPublicAddress(embedded);
  // Only global unicast (2000::/3) is public.
  if (((words[0] ?? 0) & 0xe000) !== 0x2000) return false;
  return !blocked.check(words.map((word) => word.toString(16)).join(':'), 'ipv6');
}

/** The IPv4 address an IPv6 address carries, for the forms that route to it. */
function embeddedIpv4(words: number[]): string | undefined {
  const [w0 = 0, w1 = 0, w2 = 0, w3 = 0, w4 = 0, w5 = 0, w6 = 0, w7 = 0] = words;
  const ipv4 = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  const zeroTo = (end: number) => words.slice(0, end).every((word) => word === 0);
  // ::ffff:a.b.c.d (mapped) and ::ffff:0:a.b.c.d (translated).
  if (zeroTo(5) && w5 === 0xffff) return ipv4(w6, w7);
  if (zeroTo(4) && w4 === 0xffff && w5 === 0) return ipv4(w6, w7);
  // 64:ff9b::a.b.c.d (NAT64, RFC 6052).
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 0 && w3 === 0 && w4 === 0 && w5 === 0) return ipv4(w6, w7);
  // 2002:aabb:ccdd::/48 (6to4).
  if (w0 === 0x2002) return ipv4(w1, w2);
  return undefined;
}

/** The eight 16-bit words of an IPv6 address (already checked by `isIP`); a zone (`%eth0`) is dropped. */
function ipv6Words(address: string): number[] | undefined {
  let text = (address.split('%')[0] ?? '').toLowerCase();
  const tail: number[] = [];
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    tail.push((a << 8) | b, (c << 8) | d);
    text = text.slice(0, dotted.index);
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1);
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((word) => Number.parseInt(word, 16)));
  const [head = '', rest] = text.split('::');
  const before = parse(head);
  const after = [...parse(rest ?? ''), ...tail];
  if (rest === undefined) return before.length + tail.length === 8 ? [...before, ...tail] : undefined;
  const zeros = 8 - before.length - after.length;
  if (zeros < 0) return undefined;
  return [...before, ...new Array<number>(zeros).fill(0), ...after];
}
