import path from 'node:path';
import { EventLedger } from './event-ledger.ts';
import { EventRegistry, type ManifestEvents } from './event-registry.ts';

/**
 * The ledger of an installation, `<data dir>/events`, with the event types its integrations declare. What the
 * server and the worker each open at start.
 */
export function openEventLedger(options: {
  dataDir: string;
  retentionDays?: number;
  manifests?: Iterable<ManifestEvents>;
  warn?: (message: string, details?: Record<string, unknown>) => void;
}): EventLedger {
  return new EventLedger({
    directory: path.join(options.dataDir, 'events'),
    registry: EventRegistry.withManifests(options.manifests ?? []),
    ...(options.retentionDays === undefined ? {} : { retentionDays: options.retentionDays }),
    ...(options.warn === undefined ? {} : { warn: options.warn }),
  });
}
