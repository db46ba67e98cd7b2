// The chat instance's `signed` webhook at the route: off without `webhooks.secret` (401 to a caller without the API
// token, 404 with it), refused with a secret that is not `whsec_<base64>`, and the method checked only once signed.
import { loadConfig } from '@assistant/config';
import { IntegrationRegistry } from '@assistant/integration-host';
import { discoverIntegrations } from '@assistant/manifests';
import { webhookHeaders } from '@assistant/outbound';
import { installation } from '@assistant/process';
import { createServer } from '@assistant/server';
import { describe, expect, it } from 'vitest';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const token = 'test-token-for-the-webhook-routes-test-01';
const url = '/api/integrations/chat/hooks/signed';

async function serverWith(dir: TempDir, webhooks: string) {
  await dir.write('secrets.yaml', `hook: ${secret}\nplain: not-a-whsec-secret!\n`, 0o600);
  const configPath = await dir.write(
    'config.yaml',
    `data_dir: ./data\nserver: {port: 0}\nintegrations:\n  - {type: chat, name: chat${webhooks}}\n`,
  );
  const { config } = await loadConfig({ configPath });
  const registry = new IntegrationRegistry({
    integrations: await discoverIntegrations({ builtinDir: installation.builtinIntegrationsDir }),
    config,
  });
  const app = createServer({ config, token, registry });
  await app.ready();
  return app;
}

const body = JSON.stringify({ text: 'hello', peer: 'ci' });
const signedHeaders = (id: string) => ({ 'content-type': 'application/json', ...webhookHeaders({ secret, id, body }) });

describe('the signed chat webhook route', () => {
  it('is off without webhooks.secret: 401 without the API token, 404 with it', async () => {
    await using dir = await tempDir();
    await using app = await serverWith(dir, '');
    const anonymous = await app.inject({ method: 'POST', url, headers: signedHeaders('msg_1'), payload: body });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.body).not.toContain('webhooks.secret');
    const owner = await app.inject({
      method: 'POST',
      url,
      headers: { ...signedHeaders('msg_2'), authorization: `Bearer ${token}` },
      payload: body,
    });
    expect(owner.statusCode).toBe(404);
    expect(owner.json().error.message).toContain('`webhooks.secret`');
  });

  it('refuses every request while the secret is not whsec_ base64', async () => {
    await using dir = await tempDir();
    await using app = await serverWith(dir, ', webhooks: {secret: !secret plain}');
    const signedWithIt = {
      'content-type': 'application/json',
      'webhook-id': 'msg_3',
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': 'v1,AAAA',
    };
    const response = await app.inject({ method: 'POST', url, headers: signedWithIt, payload: body });
    expect(response.statusCode).toBe(401);
    expect(response.body).not.toContain('not-a-whsec-secret');
  });

  it('answers 202 to a signed message, and tells a method it does not take only with the token', async () => {
    await using dir = await tempDir();
    await using app = await serverWith(dir, ', webhooks: {secret: !secret hook}');
    const accepted = await app.inject({ method: 'POST', url, headers: signedHeaders('msg_4'), payload: body });
    expect(accepted.statusCode).toBe(202);
    expect(accepted.json()).toMatchObject({ duplicate: false, delivery: 'started' });
    expect((await app.inject({ method: 'GET', url })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } })).statusCode).toBe(
      405,
    );
  });
});
