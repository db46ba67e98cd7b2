import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { settingsShape } from './setting-spec.ts';

describe('url settings', () => {
  it('refuse a user name or password in the URL, without repeating it, and say where a credential goes', () => {
    const schema = z.strictObject(settingsShape({ api_url: { type: 'url', required: false } }));
    expect(schema.safeParse({ api_url: 'https://api.example.com/v3' }).success).toBe(true);
    const refused = schema.safeParse({ api_url: 'https://x-access-token:ghs_s3cret@api.example.com/v3' });
    expect(refused.error?.issues).toEqual([
      expect.objectContaining({
        path: ['api_url'],
        message: expect.stringContaining('the URL holds a user name or password (https://***:***@api.example.com/v3)'),
        params: { hint: expect.stringContaining("the integration's secret setting (`!secret name`)") },
      }),
    ]);
    expect(JSON.stringify(refused.error?.issues)).not.toContain('ghs_s3cret');
  });
});
