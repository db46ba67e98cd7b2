// Generated from chat's manifest.yaml by `npm run generate:settings`: do not edit. A test fails
// when this file and the manifest disagree.

import type { Secret } from '@assistant/sdk';

/** The settings of an instance of the chat integration (its keys in config.yaml beside type and name). */
export interface ChatSettings {
  /** What a message that arrives while a turn runs does, unless the conversation or the message says otherwise: steer, followup, collect or interrupt. */
  mode: string;
  /** collect mode: the quiet time after the last message before the collected ones are answered. Milliseconds. */
  collect_window: number;
  /** collect mode: the most messages answered in one turn. */
  collect_max: number;
  /** The most model calls of one turn. */
  max_steps: number;
  /** The persona (personas/<name>.md, docs/agents.md) a new conversation records and its turns run as; a conversation keeps the one it recorded. */
  persona: string;
  /** Names under config.yaml's `mcp_servers:` whose tools every turn offers (docs/mcp.md). */
  mcp_servers: string[];
  /** How the chat stores are kept bounded by the system housekeeping (docs/chat.md "Storage and retention"): event logs of idle conversations cut by size and age, answered inbox messages removed. */
  retention: {
    /** A conversation's event log longer than this (bytes) is cut to its newest half once it has been idle for `events_idle`. */
    events_max_bytes: number;
    /** Events older than this are removed from idle logs (the transcript note keeps every message). Milliseconds. */
    events_max_age: number;
    /** A log appended to within this time is left alone. Milliseconds. */
    events_idle: number;
    /** Answered inbox messages older than this are removed; it is also the window in which a resend with the same client id is the same message. Milliseconds. */
    answered_inbox: number;
  };
  /** The Telegram bot (docs/chat.md "Telegram"); without `token` the listener idles. */
  telegram: {
    /** The bot token from @BotFather: `!secret name` from secrets.yaml. */
    token?: Secret;
    /** The Telegram user ids the bot answers; anyone else gets nothing (and a log line). */
    allowed_users: number[];
    /** The Bot API root; a local fake in tests. */
    api_root: string;
    /** How long one getUpdates long poll waits for an update. Milliseconds. */
    poll_timeout: number;
    /** The owner's notifications the bot pushes to its allowed users (docs/channels.md "Notifications"): approval requests, questions of agent tasks, tasks that failed for good, hooks' `notify:`. Not set: all four; `[]`: none. */
    notify?: ('approval' | 'clarification' | 'failure' | 'hook')[];
  };
  /** Signed webhooks both ways, by the Standard Webhooks specification (docs/webhooks.md). */
  webhooks?: {
    /** The `whsec_…` secret that signs messages POSTed to /api/integrations/<name>/hooks/signed: `!secret name`. Without it that webhook is off. */
    secret?: Secret;
    /** Endpoints that are sent the owner's notifications (approvals, questions, task failures, hooks' `notify:`) and the answers to signed webhook messages, signed, each delivery a queue task retried with backoff. */
    outbound: {
      /** Names the endpoint in its delivery tasks and logs: letters, digits, `-` and `_`. */
      name: string;
      /** Where the events are POSTed. */
      url: string;
      /** The endpoint's `whsec_…` secret: `!secret name`. */
      secret: Secret;
      /** Which notifications it is sent: approval requests, questions of agent tasks, tasks that failed for good, hooks' `notify:`, and the replies in conversations signed webhooks started. */
      events: ('approval' | 'clarification' | 'failure' | 'hook' | 'reply')[];
      /** Allow a URL on this machine or the local network (a home server); otherwise only public addresses. */
      private_network: boolean;
      /** Event types of the ledger (docs/events.md) sent to it as they are written, besides `events`: `[task.failed, chat.webhook_event]`; each event once, its id as webhook-id. Not set: none. */
      ledger_events?: string[];
    }[];
  };
  /** The Matrix bot (docs/channels.md "Matrix"); without `access_token` the listener idles. */
  matrix: {
    /** The homeserver's client API root (its base URL, e.g. https://matrix.example.org). */
    homeserver: string;
    /** The bot account's access token: `!secret name` from secrets.yaml. */
    access_token?: Secret;
    /** The bot account's user id (@assistant:example.org): its own messages are not answered. */
    user_id?: string;
    /** The Matrix user ids (@you:example.org) the bot answers and whose invites it accepts; anyone else gets nothing (and a log line). */
    allowed_users: string[];
    /** How long one /sync long poll waits for events. Milliseconds. */
    poll_timeout: number;
    /** The owner's notifications the bot pushes to its allowed users (docs/channels.md "Notifications"): approval requests, questions of agent tasks, tasks that failed for good, hooks' `notify:`. Not set: all four; `[]`: none. */
    notify?: ('approval' | 'clarification' | 'failure' | 'hook')[];
  };
  /** The Discord bot (docs/channels.md "Discord"); without `token` the listener idles. */
  discord: {
    /** The bot token from the developer portal (Bot → Reset Token): `!secret name` from secrets.yaml. */
    token?: Secret;
    /** The Discord user ids (snowflakes, as strings: "123456789012345678") the bot answers and whose button presses count; anyone else gets nothing (and a log line). */
    allowed_users: string[];
    /** The one guild (server) channel the bot reads and answers in, besides direct messages; other channels are not read. */
    channel_id?: string;
    /** The REST API root (the gateway URL comes from its GET /gateway/bot); a local fake in tests. */
    api_root: string;
    /** The owner's notifications the bot pushes to its allowed users (docs/channels.md "Notifications"): approval requests, questions of agent tasks, tasks that failed for good, hooks' `notify:`. Not set: all four; `[]`: none. */
    notify?: ('approval' | 'clarification' | 'failure' | 'hook')[];
  };
  /** The Slack app (docs/channels.md "Slack"); without `bot_token` (and `app_token` in socket mode) the listener idles. */
  slack?: {
    /** How Slack reaches the app: `socket` (Socket Mode, no public URL; needs `app_token`) or `events` (the Events API POSTing to /api/integrations/<name>/hooks/slack_events; needs `signing_secret`). */
    mode: 'socket' | 'events';
    /** The bot token (`xoxb-…`) from the app's OAuth & Permissions page: `!secret name` from secrets.yaml. */
    bot_token?: Secret;
    /** Socket mode: the app-level token (`xapp-…`, scope `connections:write`): `!secret name`. */
    app_token?: Secret;
    /** Events mode: the app's signing secret (Basic Information), which signs the Events API requests: `!secret name`. Without it that webhook is off. */
    signing_secret?: Secret;
    /** The Slack user ids (U…) the bot answers and whose button presses count; anyone else gets nothing (and a log line). */
    allowed_users: string[];
    /** One channel (C…) where the bot also answers the allowed users (messages and mentions), besides direct messages. */
    channel_id?: string;
    /** The Web API root; a local fake in tests. */
    api_url: string;
    /** The owner's notifications the bot pushes to its allowed users (docs/channels.md "Notifications"): approval requests, questions of agent tasks, tasks that failed for good, hooks' `notify:`. Not set: all four; `[]`: none. */
    notify?: ('approval' | 'clarification' | 'failure' | 'hook')[];
  };
  /** Email as chat (docs/channels.md "Email"): mail from `allowed_users` to `address` is a chat message, answered in its thread; without `password` the listener idles. */
  email?: {
    /** The IMAP host of the assistant's mailbox, e.g. imap.example.com. */
    imap_server?: string;
    /** IMAP port: 993 with tls, 143 without. */
    port: number;
    /** Connect with TLS from the start (IMAPS). */
    tls: boolean;
    /** The IMAP login, usually the assistant's address. */
    username?: string;
    /** The IMAP password or app password: `!secret name` from secrets.yaml (the same secret as the email integration's when it is the same mailbox). */
    password?: Secret;
    /** The folder read for chat mail. */
    folder: string;
    /** The assistant's address: mail must be To or Cc it, and replies are From it. Default the username. */
    address?: string;
    /** The owners' addresses: only mail From them (passing authentication) is a chat message; anyone else's is ignored and logged by address only (not its text). */
    allowed_users: string[];
    /** The authserv-ids of the mail server that receives for `address` (as the email integration's): an owner's mail counts only when its Authentication-Results say pass. With none, no mail counts. */
    authserv_ids: string[];
    /** Where replies are sent; without it none are. */
    smtp?: {
      host: string;
      port: number;
      /** TLS from the start (port 465); otherwise STARTTLS when the server offers it. */
      tls: boolean;
      username?: string;
      password?: Secret;
    };
    /** How often the folder is looked at for new mail. Milliseconds. */
    poll_interval: number;
    /** How long to wait for the IMAP or SMTP server; reads time out at four times this. Milliseconds. */
    connect_timeout: number;
    /** The owner's notifications the bot pushes to its allowed users (docs/channels.md "Notifications"): approval requests, questions of agent tasks, tasks that failed for good, hooks' `notify:`. Not set: all four; `[]`: none. */
    notify?: ('approval' | 'clarification' | 'failure' | 'hook')[];
  };
}
