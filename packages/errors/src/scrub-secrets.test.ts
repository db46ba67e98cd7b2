import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { clearSecretValues, registerSecretValue, scrubSecrets, scrubSecretsDeep } from './scrub-secrets.ts';

afterEach(() => clearSecretValues());

describe('scrubSecrets', () => {
  it('removes a registered value and its common encodings', () => {
    const secret = 'sk-Planted/Secret+Value?42';
    registerSecretValue(secret);
    const echoed = [
      `Authorization: Bearer ${secret}`,
      `url=${encodeURIComponent(secret)}`,
      JSON.stringify({ token: secret }),
      Buffer.from(secret).toString('base64'),
      Buffer.from(secret).toString('base64url'),
      Buffer.from(secret).toString('hex'),
    ];
    for (const text of echoed) {
      const scrubbed = scrubSecrets(text);
      expect(scrubbed).toContain('[secret]');
      expect(scrubbed).not.toContain(secret);
    }
  });

  it('finds a password inside HTTP Basic credentials at any alignment', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 0, maxLength: 12 }), (user) => {
        clearSecretValues();
        const password = 'hunter2-correct-horse';
        registerSecretValue(password);
        const basic = Buffer.from(`${user}:${password}`).toString('base64');
        const scrubbed = scrubSecrets(`Authorization: Basic ${basic}`);
        expect(scrubbed).toContain('[secret]');
        // What is left of the encoded password is at most the two characters it shares with its neighbours.
        expect(scrubbed.length).toBeLessThan(`Authorization: Basic ${basic}`.length - 12);
      }),
    );
  });

  it('leaves short values and unrelated text alone', () => {
    registerSecretValue('abc');
    registerSecretValue('longer-secret-value');
    expect(scrubSecrets('abc is fine')).toBe('abc is fine');
    expect(scrubSecrets('nothing here')).toBe('nothing here');
  });

  it('scrubs strings inside objects, arrays and errors', () => {
    registerSecretValue('deep-secret-123');
    const error = new Error('upstream said deep-secret-123');
    const value = scrubSecretsDeep({ list: ['a deep-secret-123 b'], error, n: 1 });
    expect(JSON.stringify(value)).not.toContain('deep-secret-123');
    expect((value.error as Error).message).toBe('upstream said [secret]');
    expect(value.n).toBe(1);
  });
});
