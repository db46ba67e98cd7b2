// The chat instance's `slack_events` webhook at the route (`auth: slack`): off without `slack.signing_secret`,
// Slack's signature (v0 HMAC of timestamp and body) and a 5-minute timestamp window checked by the server, the
// url_verification challenge answered, and an event spooled durably once however often Slack retries it.
import { createHmac } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { IntegrationRegistry } from '@assistant/integration-host';
import { discoverIntegrations } from '@assistant/manifests';
import { installation } from '@assistant/process';
import { createServer } from '@assistant/server';
import { describe, expect, it } from 'vitest';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const signingSecret = 'slack-signing-secret-for-the-route-test';
const token = 'test-token-for-the-slack-events-route-01';
const url = '/api/integrations/chat/hooks/slack_events';

async function serverWith(dir: TempDir, slack: string) {
  await dir.write('secrets.yaml', `sign: ${signingSecret}\nbot: xoxb-route-test\n`, 0o600);
  const configPath = await dir.write(
    'config.yaml',
    `data_dir: ./data\nserver: {port: 0}\nintegrations:\n  - {type: chat, name: chat${slack}}\n`,
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

function signed(body: string, options: { secret?: string; at?: number; retry?: number | undefined } = {}) {
  const timestamp = String(options.at ?? Math.floor(Date.now() / 1000));
  const signature = `v0=${createHmac('sha256', options.secret ?? signingSecret)
    .update(`v0:${timestamp}:${body}`)
    .digest('hex')}`;
  return {
    'content-type': 'application/json',
    'x-slack-request-timestamp': timestamp,
    'x-slack-signature': signature,
    ...(options.retry === undefined ? {} : { 'x-slack-retry-num': String(options.retry) }),
  };
}

const events = ', slack: {mode: events, bot_token: !secret bot, signing_secret: !secret sign, allowed_users: [U1]}';
const event = JSON.stringify({
  type: 'event_callback',
  event_id: 'Ev0ROUTE1',
  event: { type: 'message', channel_type: 'im', channel: 'DU1', user: 'U1', text: 'hi', ts: '1700000000.000100' },
});

describe('the Slack events webhook route', () => {
  it('is off without slack.signing_secret: 401 without the API token, 404 with it', async () => {
    await using dir = await tempDir();
    await using app = await serverWith(dir, ', slack: {mode: events}');
    const anonymous = await app.inject({ method: 'POST', url, headers: signed(event), payload: event });
    expect(anonymous.statusCode).toBe(401);
    const owner = await app.inject({
      method: 'POST',
      url,
      headers: { ...signed(event), authorization: `Bearer ${token}` },
      payload: event,
    });
    expect(owner.statusCode).toBe(404);
    expect(owner.json().error.message).toContain('`slack.signing_secret`');
  });

  it('refuses a wrong signature, a timestamp more than 5 minutes off, and a request without the headers', async () => {
    await using dir = await tempDir();
    await using app = await serverWith(dir, events);
    const wrong = await app.inject({
      method: 'POST',
      url,
      headers: signed(event, { secret: 'other' }),
      payload: event,
    });
    expect(wrong.statusCode).toBe(401);
    const stale = Math.floor(Date.now() / 1000) - 6 * 60;
    expect(
      (await app.inject({ method: 'POST', url, headers: signed(event, { at: stale }), payload: event })).statusCode,
    ).toBe(401);
    // Signed for another body: the signature covers the bytes.
    const tampered = await app.inject({ method: 'POST', url, headers: signed(event), payload: `${event} ` });
    expect(tampered.statusCode).toBe(401);
    const bare = await app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json' },
      payload: event,
    });
    expect(bare.statusCode).toBe(401);
    expect(wrong.body + bare.body).not.toContain(signingSecret);
    await expect(readdir(path.join(dir.path, 'data', 'chat', 'slack', 'chat.events'))).rejects.toThrow(/ENOENT/);
  });

  it('answers the url_verification challenge, and spools an event once however often Slack retries it', async () => {
    await using dir = await tempDir();
    await using app = await serverWith(dir, events);
    const challenge = JSON.stringify({ type: 'url_verification', challenge: 'the-challenge-3f9' });
    const verified = await app.inject({ method: 'POST', url, headers: signed(challenge), payload: challenge });
    expect(verified.statusCode).toBe(200);
    expect(verified.body).toBe('the-challenge-3f9');
    for (const retry of [undefined, 1, 2]) {
      const answer = await app.inject({ method: 'POST', url, headers: signed(event, { retry }), payload: event });
      expect(answer.statusCode).toBe(200);
    }
    const spooled = await readdir(path.join(dir.path, 'data', 'chat', 'slack', 'chat.events'));
    expect(spooled.filter((name) => name.endsWith('.json'))).toHaveLength(1);
  });
});
