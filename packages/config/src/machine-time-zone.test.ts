import { afterEach, describe, expect, it } from 'vitest';
import { machineTimeZone, type SystemZoneSources, zoneFromSystem } from './machine-time-zone.ts';

const zones = new Set(['UTC', 'Etc/UTC', 'Europe/Berlin', 'America/Argentina/Buenos_Aires', 'Etc/GMT+5']);
const sources = (tz: string | undefined, link?: string): SystemZoneSources => ({
  tz,
  localtimeTarget: () => link,
  hasZoneFile: (name) => zones.has(name),
});

describe('the machine time zone without Intl', () => {
  it('takes TZ as a name, with a leading colon or as a path into the zone database', () => {
    expect(zoneFromSystem(sources('Europe/Berlin'))).toBe('Europe/Berlin');
    expect(zoneFromSystem(sources(':Europe/Berlin'))).toBe('Europe/Berlin');
    expect(zoneFromSystem(sources('/usr/share/zoneinfo/America/Argentina/Buenos_Aires'))).toBe(
      'America/Argentina/Buenos_Aires',
    );
    expect(zoneFromSystem(sources('Etc/GMT+5'))).toBe('Etc/GMT+5');
  });

  it('takes the zone /etc/localtime links to when TZ is unset or empty, posix/ and right/ trees included', () => {
    expect(zoneFromSystem(sources(undefined, '/usr/share/zoneinfo/Europe/Berlin'))).toBe('Europe/Berlin');
    expect(zoneFromSystem(sources('', '../usr/share/zoneinfo/right/Europe/Berlin'))).toBe('Europe/Berlin');
    expect(zoneFromSystem(sources(undefined, '/usr/share/zoneinfo/posix/Europe/Berlin'))).toBe('Europe/Berlin');
  });

  it('calls every alias of UTC UTC, as Intl does', () => {
    expect(zoneFromSystem(sources(undefined, '/usr/share/zoneinfo/Etc/UTC'))).toBe('UTC');
    expect(zoneFromSystem(sources('UTC'))).toBe('UTC');
  });

  it('leaves the answer to Intl for a POSIX rule, a name the database lacks, or no link', () => {
    expect(zoneFromSystem(sources('CET-1CEST,M3.5.0,M10.5.0/3'))).toBeUndefined();
    expect(zoneFromSystem(sources('Europe/Atlantis'))).toBeUndefined();
    expect(zoneFromSystem(sources('../../etc/passwd'))).toBeUndefined();
    expect(zoneFromSystem(sources(undefined, undefined))).toBeUndefined();
    expect(zoneFromSystem(sources(undefined, '/etc/zones/mine'))).toBeUndefined();
  });
});

describe('machineTimeZone', () => {
  const before = process.env.TZ;
  afterEach(() => {
    if (before === undefined) delete process.env.TZ;
    else process.env.TZ = before;
  });

  it('names a zone Intl formats in, the one Intl itself gives for this machine', () => {
    const zone = machineTimeZone();
    expect(() => new Intl.DateTimeFormat('en', { timeZone: zone })).not.toThrow();
    expect(new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone).toBe(
      Intl.DateTimeFormat().resolvedOptions().timeZone,
    );
  });

  it('follows TZ, as the process sees it now', () => {
    process.env.TZ = 'Asia/Tokyo';
    expect(machineTimeZone()).toBe('Asia/Tokyo');
    process.env.TZ = 'Etc/GMT-14';
    expect(machineTimeZone()).toBe('Etc/GMT-14');
  });
});
