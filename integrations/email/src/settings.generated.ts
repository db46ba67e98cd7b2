// Generated from email's manifest.yaml by `npm run generate:settings`: do not edit. A test fails
// when this file and the manifest disagree.

import type { Secret } from '@assistant/sdk';

/** The settings of an instance of the email integration (its keys in config.yaml beside type and name). */
export interface EmailSettings {
  /** The IMAP host, e.g. imap.example.com. */
  imap_server?: string;
  /** A local Maildir (as mbsync or offlineimap keep it) to read instead of IMAP; relative to config.yaml. */
  maildir?: string;
  /** IMAP port: 993 with tls, 143 without. */
  port: number;
  /** Connect with TLS from the start (IMAPS). */
  tls: boolean;
  /** The login, usually the address. */
  username?: string;
  /** The password or app password: `!secret name` from secrets.yaml. */
  password?: Secret;
  /** The folder to read. */
  mailbox: string;
  /** At most this many of the newest messages per check. */
  limit: number;
  /** Only mail newer than this. Milliseconds. */
  window: number;
  /** Where `archive` moves mail. */
  archive_folder: string;
  /** Where `draft_reply` saves drafts. */
  drafts_folder: string;
  /** How long to wait for the server before the task fails. Milliseconds. */
  connect_timeout: number;
  /** The authserv-ids of your own mail servers (the first word of the Authentication-Results headers they add, e.g. mx.google.com). Only their results count; with none, `authentication` is `unknown`. */
  authserv_ids: string[];
  /** Where `send_reply` and mailto: unsubscribes send mail; without it they fail. */
  smtp?: {
    host: string;
    port: number;
    /** TLS from the start (port 465); otherwise STARTTLS when the server offers it. */
    tls: boolean;
    username?: string;
    password?: Secret;
    /** The From address; default the IMAP username. */
    from?: string;
  };
}
