import { describe, expect, it } from 'vitest';
import { isPublicAddress } from './public-address.ts';

describe('isPublicAddress', () => {
  it('hole 3: loopback, private, CGNAT, link-local, unique-local, unspecified, multicast and IPv4-mapped forms are not public', () => {
    const notPublic = [
      '127.0.0.1',
      '127.255.0.9',
      '10.0.0.1',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.1.1',
      '100.64.0.1',
      '100.127.255.254',
      '169.254.169.254',
      '0.0.0.0',
      '224.0.0.1',
      '239.255.255.250',
      '255.255.255.255',
      '192.0.2.10',
      '::',
      '::1',
      'fe80::1',
      'fe80::1%eth0',
      'fc00::1',
      'fd12:3456::1',
      'fec0::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '::ffff:10.0.0.1',
      '::ffff:0:10.0.0.1',
      '64:ff9b::127.0.0.1',
      '2002:7f00:1::1',
      '2001:db8::1',
      '2001::1',
      '::127.0.0.1',
      'localhost',
      'example.com',
      '',
    ];
    for (const address of notPublic) expect(isPublicAddress(address), address).toBe(false);
  });

  it('hole 3: public IPv4 and global IPv6 addresses are public, also through NAT64 and IPv4-mapped forms', () => {
    const publicAddresses = [
      '93.184.216.34',
      '8.8.8.8',
      '172.32.0.1',
      '100.128.0.1',
      '2606:4700:4700::1111',
      '2a00:1450:4001:81c::200e',
      '::ffff:8.8.8.8',
      '64:ff9b::8.8.8.8',
    ];
    for (const address of publicAddresses) expect(isPublicAddress(address), address).toBe(true);
  });
});
