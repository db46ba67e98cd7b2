/**
 * The contract every chat channel implements (docs/channels.md, decision 0067): the platform-specific part only.
 * What is the same on every platform — who is answered, accepting into the chat inbox durably before the platform
 * is told, dropping redeliveries, streaming a turn's reply by edits, splitting, resuming after a restart, backing
 * off an outage — is the `ChannelRunner`'s (channel-runner.ts), written once and checked for each adapter by
 * the conformance suite (testing/channel-conformance.ts).
 *
 * Ids cross the contract as strings, named by the adapter (Telegram's numbers become their decimal text): the
 * runner stores them and hands them back, it never reads them.
 */

/** A message someone wrote to the bot. */
export interface ChannelMessage {
  kind: 'message';
  /**
   * Deterministic, from the platform's own ids (Telegram: `tg-<update_id>`): a delivery of the same message again
   * (a platform retry, a redelivery after a crash before it was acknowledged) has the same id, and the chat inbox
   * keeps one message per id (the client id of `ChatService.post`, 1-200 characters).
   */
  id: string;
  /** Who wrote it: the platform's user id, matched against the channel's allowed users. */
  peer: string;
  /** Where replies go: the chat, channel or thread it was written in. */
  thread: string;
  /**
   * The kind of place when it is not a direct (private) conversation with the bot ("group", "channel"…); such
   * messages are ignored, and logged with the peer id only.
   */
  shared?: string;
  /** Its text; undefined for what is not text (a photo, a sticker), which is answered with "text only". */
  text: string | undefined;
}

/** Someone pressed a button the bot sent ({@link ChannelAdapter.sendButtons}). */
export interface ChannelPress {
  kind: 'press';
  /** Deterministic, from the platform's ids, like a message's: a press delivered again has the same id. */
  id: string;
  /** Who pressed: only allowed users' presses count. */
  peer: string;
  /** Where the button's message is. */
  thread: string;
  /** The button's `data`, as the platform hands it back (the runner checks it; a platform may let a client forge it). */
  data: string;
  /** The platform's handle to answer this press with ({@link ChannelAdapter.answerPress}). */
  callback: string;
}

/** A button under a message: its label, and what a press hands back (at most 64 bytes: Telegram's limit). */
export interface ChannelButton {
  label: string;
  data: string;
}

/** Something the platform delivered that is not for the runner (an edit, a join): only its cursor counts. */
interface ChannelOther {
  kind: 'other';
  id: string;
}

export type ChannelInbound = ChannelMessage | ChannelPress | ChannelOther;

/** One delivery of a {@link ChannelAdapter.receive} batch. */
export interface ChannelDelivery {
  event: ChannelInbound;
  /**
   * For platforms with a cursor (Telegram's getUpdates offset): the position just after this event. The runner
   * stores it durably once the event is handled (the acknowledgement: the next `receive` starts there), and drops
   * a delivery whose cursor is not past the stored one (delivered again after it was acknowledged).
   */
  cursor?: number;
}

/** A message the adapter sent, as the runner keeps it to edit it later. */
export interface ChannelSent {
  /** The platform's message id, as a string. */
  id: string;
}

/**
 * How a failed platform call is taken:
 * - `bad_credentials`: the token is wrong or revoked; retried slowly, logged once (`message` must not hold the
 *   token), and said again when it works;
 * - `transient`: the platform is down, rate limits or the network failed; retried with backoff (`retryAfterMs`
 *   when the platform says how long);
 * - `refused`: the platform refused this call (too long, gone…); not retried.
 */
export type ChannelFailure =
  | { kind: 'bad_credentials'; message: string }
  | { kind: 'transient'; retryAfterMs?: number }
  | { kind: 'refused' };

export interface ChannelAdapter {
  /** The channel's name: conversations' `channel`, the settings key (`telegram.allowed_users`), state folder. */
  readonly name: string;
  /** For people: "Telegram". */
  readonly label: string;
  /** What the credentials are called in log lines: "bot token". */
  readonly credentials: string;
  /** The longest message the platform takes, in characters (Telegram: 4096). */
  readonly maxMessageChars: number;
  /** A streamed reply is edited at most this often (the platform's edit rate limit). */
  readonly editIntervalMs: number;
  /**
   * False for a platform that cannot edit what it sent (email): the runner then sends each turn's reply once, when
   * it is final, instead of a message on the first token edited as more come. @default true
   */
  readonly streaming?: boolean;

  /**
   * The next inbound deliveries, waiting for some (a long poll, a gateway's queue) until `signal` aborts; an empty
   * array when none came. `cursor` is the stored cursor (0 at first). Throws on a platform failure, which
   * {@link classify} judges. A push platform (a gateway, a webhook) queues what it received and hands it out here;
   * it acknowledges an event to the platform only in {@link acknowledge}, after the runner stored it.
   */
  receive(options: { cursor: number; signal: AbortSignal }): Promise<ChannelDelivery[]>;
  /** Tells the platform a delivery is handled (stored in the chat inbox, or ignored). Telegram: nothing (the cursor). */
  acknowledge?(delivery: ChannelDelivery, signal: AbortSignal): Promise<void>;

  /** Sends a message of at most {@link maxMessageChars} characters (already formatted) to a thread. */
  send(options: { thread: string; text: string; signal: AbortSignal }): Promise<ChannelSent>;
  /** Replaces a sent message's text; resolves also when it shows that text already. */
  edit(options: { thread: string; message: string; text: string; signal: AbortSignal }): Promise<void>;
  /**
   * Sends a message with a row of buttons (approvals: Approve, Reject). Without it, approvals are decided by text
   * commands only (`/approve ID`).
   */
  sendButtons?(options: {
    thread: string;
    text: string;
    buttons: readonly ChannelButton[];
    signal: AbortSignal;
  }): Promise<ChannelSent>;
  /** Acknowledges a press to the presser (stops the button's spinner, shows `text` briefly). */
  answerPress?(options: { press: ChannelPress; text: string; signal: AbortSignal }): Promise<void>;
  /** Shows "typing…" (cosmetic: failures are ignored). */
  typing(options: { thread: string; signal: AbortSignal }): Promise<void>;
  /** The thread to reach a peer in on the bot's own initiative (approvals, failures): its direct conversation. */
  directThread(peer: string): string;

  /**
   * Markdown (the model's output) as the platform shows it: its own markup, code blocks and links. Applied to every
   * text before it is split and sent.
   */
  format(markdown: string): string;
  /**
   * Plain text (the runner's own words, titles, ids, error messages) as the platform shows it literally, to put
   * beside formatted text: Telegram's and Matrix's HTML escape `&`, `<`, `>`. Without it, the text as it is (a
   * platform whose messages are plain text).
   */
  escape?(text: string): string;
  /**
   * Text shown exactly as it is, as a code block: what an approval will do (its canonical rendering), never
   * formatted. Without it, {@link escape}d.
   */
  codeBlock?(text: string): string;
  /**
   * Splits a formatted text into messages of at most {@link maxMessageChars} characters, each valid on its own
   * (markup closed and reopened). Without it the runner cuts plain text at a line break where there is one.
   */
  split?(text: string): string[];

  /** How a failed call (of any method above) is taken. */
  classify(error: unknown): ChannelFailure;
}
