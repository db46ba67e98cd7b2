import type { EventRecord, EventTypeDefinition } from '@assistant/events';
import type { HookEventRegistry } from '../compile-hook.ts';
import type { HookCatalog } from '../hook-catalog.ts';

/** Two event types as the ledger's registry declares them: one an outsider writes, one from our own state. */
export const testEventTypes: Record<string, Pick<EventTypeDefinition, 'name' | 'fields'>> = {
  'mail.received': {
    name: 'mail.received',
    fields: {
      from_address: { type: 'string', trusted: false },
      from_domain: { type: 'string', trusted: false },
      subject: { type: 'string', trusted: false },
      instance: { type: 'string', trusted: true },
      authenticated: { type: 'boolean', trusted: true },
    },
  },
  'task.failed': {
    name: 'task.failed',
    fields: {
      task_type: { type: 'string', trusted: true },
      integration: { type: 'string', trusted: true },
      attempts: { type: 'number', trusted: true },
      error: { type: 'string', trusted: false },
    },
  },
};

export const testRegistry: HookEventRegistry = {
  get: (type) => testEventTypes[type],
  names: () => Object.keys(testEventTypes),
};

export const testCatalog: HookCatalog = {
  service: (call) =>
    call === 'research.web.search' || call === 'research.research.search'
      ? { reversible: true, call: 'research.research.search' }
      : call === 'mail.send' || call === 'mail.work.send'
        ? { reversible: false, call: 'mail.work.send' }
        : { problem: `\`${call}\`: no such service` },
  scripts: { note: { reversible: true }, deploy: { reversible: false } },
  taskTypes: {
    'system.echo': { tier: 'read_only' },
    'email.inbox.check': {},
    'github.pulls.merge': { tier: 'irreversible' },
    'service.research.search': { tier: 'soft' },
  },
  instances: ['work-mail', 'github'],
  llms: ['default', 'fast'],
};

/** A stored event of `type` with `data`. */
export function testEvent(type: string, data: Record<string, unknown>, extra: Partial<EventRecord> = {}): EventRecord {
  return {
    id: `ev-${'0'.repeat(19)}1`,
    type,
    at: '2026-11-28T08:00:00.000Z',
    source: 'test',
    native_id: 'n1',
    data,
    ...extra,
  };
}
