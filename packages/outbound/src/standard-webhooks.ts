import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { AssistantError } from '@assistant/errors';

/**
 * Signing and verifying by the Standard Webhooks specification (standardwebhooks.com): the sender signs
 * `${webhook-id}.${webhook-timestamp}.${body}` with HMAC-SHA256 keyed with the secret's bytes, and sends the
 * base64 digest as `v1,<digest>` in `webhook-signature` (several, space-separated, while a secret is rotated). The
 * receiver recomputes it, compares in constant time, and refuses a timestamp outside its tolerance window, so a
 * captured request cannot be replayed later; within the window the `webhook-id` is what a receiver dedupes on.
 */

/** The secret's prefix in the specification's spelling: `whsec_` then the base64 of the key. */
export const webhookSecretPrefix = 'whsec_';

/** The tolerance the specification recommends: 5 minutes either side of the receiver's clock. */
export const defaultWebhookToleranceMs = 5 * 60_000;

/** Why a request did not verify, as {@link WebhookSignatureError.reason} gives it. */
export type WebhookSignatureRefusal = 'missing_header' | 'bad_timestamp' | 'too_old' | 'too_new' | 'no_match';

/** A request that did not verify (`WEBHOOK_SIGNATURE_INVALID`); `reason` says which check refused it. */
export class WebhookSignatureError extends AssistantError {
  readonly reason: WebhookSignatureRefusal;

  constructor(reason: WebhookSignatureRefusal, message: string) {
    super('WEBHOOK_SIGNATURE_INVALID', message);
    this.reason = reason;
  }
}

const base64Pattern = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The key bytes of a secret: `whsec_<base64>`, or the base64 without the prefix (as the reference libraries take
 * it). Throws `WEBHOOK_SECRET_INVALID` for anything else, naming `what` (the setting) but never the value.
 */
export function webhookSecretKey(secret: string, what = 'the webhook secret'): Buffer {
  const encoded = secret.trim().startsWith(webhookSecretPrefix)
    ? secret.trim().slice(webhookSecretPrefix.length)
    : secret.trim();
  // Buffer.from(…, 'base64') skips characters it does not know: check the alphabet first, so a typo is an error.
  const key = base64Pattern.test(encoded) ? Buffer.from(encoded, 'base64') : Buffer.alloc(0);
  if (key.length === 0) {
    throw new AssistantError(
      'WEBHOOK_SECRET_INVALID',
      `Expected ${what} to be \`whsec_\` followed by base64 (${secret.length} characters received)`,
      { hint: 'generate one with: echo "whsec_$(openssl rand -base64 32)"' },
    );
  }
  return key;
}

/** A new random secret, `whsec_` and 32 random bytes in base64. */
export function newWebhookSecret(): string {
  return `${webhookSecretPrefix}${randomBytes(32).toString('base64')}`;
}

/** Options of {@link signWebhook}. */
export interface SignWebhookOptions {
  /** `whsec_<base64>`, or the base64 alone. */
  secret: string;
  /** The message id: the same on every retry of one message, so the receiver can drop a repeat. */
  id: string;
  /** Seconds since the epoch, as the `webhook-timestamp` header carries it. */
  timestampSeconds: number;
  /** The exact body bytes sent. */
  body: string | Uint8Array;
}

/** `v1,<base64 HMAC-SHA256 of id.timestamp.body>`, the value of one signature in `webhook-signature`. */
export function signWebhook(options: SignWebhookOptions): string {
  const mac = createHmac('sha256', webhookSecretKey(options.secret));
  mac.update(`${options.id}.${options.timestampSeconds}.`);
  mac.update(options.body);
  return `v1,${mac.digest('base64')}`;
}

/** The three headers of a signed request, for a body sent now (or at `nowMs`). */
export function webhookHeaders(options: {
  secret: string;
  id: string;
  body: string | Uint8Array;
  /** @default Date.now() */
  nowMs?: number;
}): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  const timestampSeconds = Math.floor((options.nowMs ?? Date.now()) / 1000);
  return {
    'webhook-id': options.id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': signWebhook({ secret: options.secret, id: options.id, timestampSeconds, body: options.body }),
  };
}

/** Options of {@link verifyWebhook}. */
export interface VerifyWebhookOptions {
  secret: string;
  /** The request's headers; names in any case, a repeated header's first value counts. */
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** The raw body bytes, exactly as received. */
  body: string | Uint8Array;
  /** How far the timestamp may be from `nowMs`, before or after. @default 300_000 (5 minutes) */
  toleranceMs?: number;
  /** @default Date.now() */
  nowMs?: number;
}

/** What a verified request says: its id (to dedupe on) and its timestamp. */
export interface VerifiedWebhook {
  id: string;
  timestampSeconds: number;
}

/**
 * Checks a request signed by the Standard Webhooks scheme: the three headers are present, the timestamp is within
 * `toleranceMs` of now, and one of the `v1,` signatures matches (others, `v1a,` say, are skipped). Throws
 * {@link WebhookSignatureError}; a bad secret throws `WEBHOOK_SECRET_INVALID`.
 */
export function verifyWebhook(options: VerifyWebhookOptions): VerifiedWebhook {
  const header = (name: string): string | undefined => {
    for (const [key, value] of Object.entries(options.headers)) {
      if (key.toLowerCase() !== name) continue;
      const first = typeof value === 'string' ? value : value?.[0];
      if (first !== undefined && first.trim() !== '') return first.trim();
    }
    return undefined;
  };
  const id = header('webhook-id');
  const timestamp = header('webhook-timestamp');
  const signatures = header('webhook-signature');
  const missing = [
    ...(id === undefined ? ['webhook-id'] : []),
    ...(timestamp === undefined ? ['webhook-timestamp'] : []),
    ...(signatures === undefined ? ['webhook-signature'] : []),
  ];
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    throw new WebhookSignatureError('missing_header', `the request has no ${missing.join(', ')} header`);
  }
  if (!/^\d{1,12}$/.test(timestamp)) {
    throw new WebhookSignatureError(
      'bad_timestamp',
      `Expected webhook-timestamp to be seconds since the epoch, got ${JSON.stringify(timestamp.slice(0, 40))}`,
    );
  }
  const timestampSeconds = Number(timestamp);
  const toleranceMs = options.toleranceMs ?? defaultWebhookToleranceMs;
  const nowMs = options.nowMs ?? Date.now();
  const offsetMs = timestampSeconds * 1000 - nowMs;
  if (offsetMs < -toleranceMs) {
    throw new WebhookSignatureError(
      'too_old',
      `webhook-timestamp ${timestamp} is ${Math.round(-offsetMs / 1000)} s old; at most ${toleranceMs / 1000} s are accepted`,
    );
  }
  if (offsetMs > toleranceMs) {
    throw new WebhookSignatureError(
      'too_new',
      `webhook-timestamp ${timestamp} is ${Math.round(offsetMs / 1000)} s ahead of this clock; at most ${toleranceMs / 1000} s are accepted`,
    );
  }
  const expected = Buffer.from(
    signWebhook({ secret: options.secret, id, timestampSeconds, body: options.body }).slice(3),
    'base64',
  );
  let versioned = 0;
  for (const entry of signatures.split(' ')) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue;
    versioned += 1;
    const sent = Buffer.from(entry.slice(comma + 1), 'base64');
    // Decoded to bytes: equal lengths are required by timingSafeEqual, and the length of a digest is no secret.
    if (sent.length === expected.length && timingSafeEqual(sent, expected)) return { id, timestampSeconds };
  }
  throw new WebhookSignatureError(
    'no_match',
    versioned === 0
      ? 'webhook-signature holds no v1 signature'
      : `none of the ${versioned} v1 signature(s) in webhook-signature matches the body`,
  );
}
