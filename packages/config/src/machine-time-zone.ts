import { existsSync, readlinkSync } from 'node:fs';

/** What {@link zoneFromSystem} reads of the machine; real by default, given by tests. */
export interface SystemZoneSources {
  /** The `TZ` variable. */
  tz: string | undefined;
  /** Where `/etc/localtime` points, or undefined when it is no symbolic link. */
  localtimeTarget: () => string | undefined;
  /** Whether the system's zone database has a file of this name (`Europe/Berlin`). */
  hasZoneFile: (name: string) => boolean;
}

const zoneDirectory = '/usr/share/zoneinfo';
/** An IANA zone name as the system's database spells it: `UTC`, `Europe/Berlin`, `America/Argentina/Buenos_Aires`. */
const zoneName = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+){0,2}$/;

const utcAlias = /^(?:Etc\/)?(?:UTC|UCT|Universal|Zulu|Greenwich|GMT(?:[+-]?0)?)$/;

/** The machine's own, with `TZ` as the process sees it now. */
const systemSources = (): SystemZoneSources => ({
  tz: process.env.TZ,
  localtimeTarget: () => {
    try {
      return readlinkSync('/etc/localtime');
    } catch {
      return undefined;
    }
  },
  hasZoneFile: (name) => existsSync(`${zoneDirectory}/${name}`),
});

/**
 * The machine's zone as the system says it, the way ICU finds it on Linux: `TZ` (`Europe/Berlin`, `:Europe/Berlin`
 * or a path under the zone database), else the zone file `/etc/localtime` links to. A name is taken only when the
 * system's zone database has that file, so that a POSIX rule (`CET-1CEST`) or a typo is not; undefined otherwise, and
 * then Intl is asked. Reading two paths instead of starting ICU keeps 8 MB of time-zone and locale data out of a
 * process that never formats a date in another zone (docs/performance.md, "Issue 38: the processes' resident memory").
 */
export function zoneFromSystem(sources: SystemZoneSources = systemSources()): string | undefined {
  if (sources.tz !== undefined && sources.tz !== '') return checked(sources.tz.replace(/^:/, ''), sources);
  const target = sources.localtimeTarget();
  return target === undefined ? undefined : checked(target, sources);
}

function checked(nameOrPath: string, sources: SystemZoneSources): string | undefined {
  const at = nameOrPath.lastIndexOf('zoneinfo/');
  let name = at === -1 ? nameOrPath : nameOrPath.slice(at + 'zoneinfo/'.length);
  // The database's `posix/` and `right/` trees hold the same zones (the latter with leap seconds).
  name = name.replace(/^(?:posix|right)\//, '');
  if (!zoneName.test(name) || !sources.hasZoneFile(name)) return undefined;
  // Intl calls every alias of UTC `UTC`, as Debian's default `/etc/localtime` (`Etc/UTC`) is then shown too.
  return utcAlias.test(name) ? 'UTC' : name;
}

/** The machine's own time zone: the default of `owner.timezone`. */
export function machineTimeZone(): string {
  return zoneFromSystem() ?? (Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC');
}
