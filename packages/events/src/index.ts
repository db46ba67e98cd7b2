export {
  compareCursors,
  EventLedger,
  type EventLedgerOptions,
  eventId,
  type LedgerEvent,
  parseCursor,
} from './event-ledger.ts';
export { EventRegistry, type ManifestEvents } from './event-registry.ts';
export type {
  EventField,
  EventFieldType,
  EventInput,
  EventPage,
  EventQuery,
  EventRecord,
  EventSink,
  EventTypeDefinition,
} from './event-types.ts';
export { EventingNoteStore } from './eventing-note-store.ts';
export { openEventLedger } from './open-event-ledger.ts';
