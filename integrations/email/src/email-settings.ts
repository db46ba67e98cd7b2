import type { HandlerContext } from '@assistant/sdk';

/** An email instance's settings, as the manifest declares them (validated and defaulted by config loading). */
export interface EmailSettings {
  imap_server?: string;
  /** A local Maildir instead of IMAP (relative to config.yaml's folder). */
  maildir?: string;
  port: number;
  tls: boolean;
  username?: string;
  password?: { reveal(): string; isSet: boolean; name: string };
  mailbox: string;
  limit: number;
  /** Milliseconds. */
  window: number;
  archive_folder: string;
  drafts_folder: string;
  /** Milliseconds. */
  connect_timeout: number;
  /** The authserv-ids of the owner's own mail servers: only their Authentication-Results headers are trusted. */
  authserv_ids: string[];
  smtp?: {
    host: string;
    port: number;
    tls: boolean;
    username?: string;
    password?: { reveal(): string; isSet: boolean; name: string };
    from?: string;
  };
}

export type EmailContext<Payload = unknown> = HandlerContext<Payload, EmailSettings>;

/** Where a message's note lives: one per UIDVALIDITY and UID, so a renumbered mailbox never mixes two messages. */
export function messageNotePath(instance: string, uidValidity: string, uid: number | string): string {
  const safe = (value: string) => value.replace(/[^A-Za-z0-9._-]/g, '_');
  return `email/${safe(instance)}/${safe(uidValidity)}-${safe(String(uid))}.md`;
}
