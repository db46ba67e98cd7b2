import { isAssistantError } from '@assistant/errors';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  newWebhookSecret,
  signWebhook,
  verifyWebhook,
  WebhookSignatureError,
  webhookHeaders,
  webhookSecretKey,
} from './standard-webhooks.ts';

// The vectors of the specification's reference libraries (standard-webhooks/standard-webhooks,
// libraries/javascript/src/webhook.test.ts): the same secret, id, body and timestamp give this signature.
const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const id = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const body = '{"test": 2432232314}';
const timestampSeconds = 1614265330;
const signature = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
const atMs = timestampSeconds * 1000;

function headersAt(nowMs: number, override: Record<string, string | undefined> = {}) {
  return { ...webhookHeaders({ secret, id, body, nowMs }), ...override };
}

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof WebhookSignatureError) return error.reason;
    throw error;
  }
  throw new Error('expected a WebhookSignatureError');
}

describe('signWebhook', () => {
  it("gives the reference libraries' signature for their vector, with and without the whsec_ prefix", () => {
    expect(signWebhook({ secret, id, timestampSeconds, body })).toBe(signature);
    expect(signWebhook({ secret: secret.slice('whsec_'.length), id, timestampSeconds, body })).toBe(signature);
    expect(signWebhook({ secret, id, timestampSeconds, body: new TextEncoder().encode(body) })).toBe(signature);
  });

  it('sends the three headers for the time given', () => {
    expect(webhookHeaders({ secret, id, body, nowMs: atMs + 999 })).toEqual({
      'webhook-id': id,
      'webhook-timestamp': String(timestampSeconds),
      'webhook-signature': signature,
    });
  });
});

describe('verifyWebhook', () => {
  it('accepts the vector within the window, header names in any case', () => {
    expect(
      verifyWebhook({
        secret,
        body,
        nowMs: atMs,
        headers: { 'Webhook-Id': id, 'WEBHOOK-TIMESTAMP': String(timestampSeconds), 'webhook-signature': signature },
      }),
    ).toEqual({ id, timestampSeconds });
  });

  it('accepts one matching v1 signature among several, skipping other versions', () => {
    const decoy = 'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=';
    const headers = headersAt(atMs, {
      'webhook-signature': [decoy, 'v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=', signature, decoy].join(' '),
    });
    expect(verifyWebhook({ secret, body, nowMs: atMs, headers }).id).toBe(id);
  });

  it('refuses a missing header, naming it', () => {
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const headers = headersAt(atMs, { [name]: undefined });
      expect(() => verifyWebhook({ secret, body, nowMs: atMs, headers })).toThrow(name);
      expect(refusal(() => verifyWebhook({ secret, body, nowMs: atMs, headers }))).toBe('missing_header');
    }
  });

  it('refuses a timestamp that is not seconds', () => {
    const headers = headersAt(atMs, { 'webhook-timestamp': 'hello' });
    expect(refusal(() => verifyWebhook({ secret, body, nowMs: atMs, headers }))).toBe('bad_timestamp');
  });

  it('refuses a timestamp outside the 5-minute window either way, and accepts one at its edge', () => {
    const headers = headersAt(atMs);
    expect(verifyWebhook({ secret, body, headers, nowMs: atMs + 300_000 }).id).toBe(id);
    expect(verifyWebhook({ secret, body, headers, nowMs: atMs - 300_000 }).id).toBe(id);
    expect(refusal(() => verifyWebhook({ secret, body, headers, nowMs: atMs + 301_000 }))).toBe('too_old');
    expect(refusal(() => verifyWebhook({ secret, body, headers, nowMs: atMs - 301_000 }))).toBe('too_new');
    expect(refusal(() => verifyWebhook({ secret, body, headers, nowMs: atMs + 11_000, toleranceMs: 10_000 }))).toBe(
      'too_old',
    );
  });

  it('refuses a wrong, partial or empty signature, another body, id or timestamp, and another secret', () => {
    const cases: { headers: Record<string, string | undefined>; body?: string; secret?: string }[] = [
      { headers: { 'webhook-signature': 'v1,dawfeoifkpqwoekfpqoekf' } },
      { headers: { 'webhook-signature': signature.slice(0, 8) } },
      { headers: { 'webhook-signature': 'v1,' } },
      { headers: { 'webhook-signature': signature.replace('v1,', 'v2,') } },
      { headers: {}, body: `${body} ` },
      { headers: { 'webhook-id': `${id}x` } },
      { headers: { 'webhook-timestamp': String(timestampSeconds + 1) } },
      { headers: {}, secret: newWebhookSecret() },
    ];
    for (const entry of cases) {
      const headers = { ...headersAt(atMs), ...entry.headers };
      expect(
        refusal(() =>
          verifyWebhook({ secret: entry.secret ?? secret, body: entry.body ?? body, nowMs: atMs, headers }),
        ),
      ).toBe('no_match');
    }
  });

  it('verifies what it signs, for any id and body', () => {
    const own = newWebhookSecret();
    for (const [oneId, oneBody] of [
      ['a', ''],
      ['msg_é', 'ünïcode ✓'],
      ['x'.repeat(200), JSON.stringify({ nested: { list: [1, 2, 3] } })],
    ] as const) {
      const headers = webhookHeaders({ secret: own, id: oneId, body: oneBody });
      expect(verifyWebhook({ secret: own, body: Buffer.from(oneBody), headers }).id).toBe(oneId);
    }
  });
});

describe('sign and verify, for any message', () => {
  it('accept what was signed and refuse any change to its body, id or timestamp', () => {
    const own = 'whsec_c2VjcmV0LW9mLXRoZS1yZWNlaXZlci0wMTIzNDU2Nzg5';
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }).filter((id) => id.trim() === id && id !== ''),
        fc.string({ maxLength: 200 }),
        fc.string({ minLength: 1, maxLength: 5 }),
        (oneId, oneBody, extra) => {
          const headers = webhookHeaders({ secret: own, id: oneId, body: oneBody, nowMs: atMs });
          expect(verifyWebhook({ secret: own, body: oneBody, headers, nowMs: atMs }).id).toBe(oneId);
          expect(refusal(() => verifyWebhook({ secret: own, body: oneBody + extra, headers, nowMs: atMs }))).toBe(
            'no_match',
          );
          const otherId = { ...headers, 'webhook-id': `${oneId}${extra.trim() || 'x'}` };
          expect(refusal(() => verifyWebhook({ secret: own, body: oneBody, headers: otherId, nowMs: atMs }))).toBe(
            'no_match',
          );
          const later = { ...headers, 'webhook-timestamp': String(timestampSeconds + 1) };
          expect(refusal(() => verifyWebhook({ secret: own, body: oneBody, headers: later, nowMs: atMs }))).toBe(
            'no_match',
          );
        },
      ),
    );
  });
});

describe('webhookSecretKey', () => {
  it('decodes whsec_ base64 and refuses anything else without echoing it', () => {
    expect(webhookSecretKey(secret).length).toBe(24);
    for (const bad of ['', 'whsec_', 'whsec_not base64!', 'hunter2?']) {
      let caught: unknown;
      try {
        webhookSecretKey(bad, '`webhooks.secret`');
      } catch (error) {
        caught = error;
      }
      expect(isAssistantError(caught, 'WEBHOOK_SECRET_INVALID')).toBe(true);
      expect((caught as Error).message).toContain('`webhooks.secret`');
      if (bad.length > 6) expect((caught as Error).message).not.toContain(bad);
    }
  });
});
