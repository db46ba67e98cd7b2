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
