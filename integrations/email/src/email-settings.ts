import type { HandlerContext } from '@assistant/sdk';

import type { EmailSettings } from './settings.generated.ts';

// The settings type is generated from manifest.yaml (`npm run generate:settings`), the one place they are declared.
export type { EmailSettings };

export type EmailContext<Payload = unknown> = HandlerContext<Payload, EmailSettings>;

/** Where a message's note lives: one per UIDVALIDITY and UID, so a renumbered mailbox never mixes two messages. */
export function messageNotePath(instance: string, uidValidity: string, uid: number | string): string {
  const safe = (value: string) => value.replace(/[^A-Za-z0-9._-]/g, '_');
  return `email/${safe(instance)}/${safe(uidValidity)}-${safe(String(uid))}.md`;
}
