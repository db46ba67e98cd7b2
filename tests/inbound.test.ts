import { createHmac } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { repoRoot, runNode, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const hooky = path.join(repoRoot, 'tests/fixtures/integrations/inbound/hooky');
const misplaced = path.join(repoRoot, 'tests/fixtures/integrations/inbound/misplaced');
const serverMain = path.join(repoRoot, 'apps/server/src/main.ts');
const secret = 'hooky-shared-secret';

const healthDetails = z.object({
  listeners: z.array(
    z.looseObject({ id: z.string(), state: z.string(), restarts: z.number(), last_error: z.string().optional() }),
  ),
});

function sign(body: string, key = secret): string {
  return `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
}

/** Pending task files of a type, with their YAML text. */
async function pendingOf(dataDir: string, type: string): Promise<string[]> {
  const directory = path.join(dataDir, 'queue/pending');
  const names = await readdir(directory).catch(() => [] as string[]);
  const matching = names.filter((name) => name.endsWith(`--${type}.yaml`)).sort();
  return Promise.all(matching.map((name) => readFile(path.join(directory, name), 'utf8')));
}

/** POSTs a signed delivery with a `Host` header of our choosing; resolves with the status. */
function statusWithHost(port: number, host: string, body: string, signature: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/integrations/hooks/hooks/deliveries',
        headers: { host, 'content-type': 'application/json', 'x-hub-signature-256': signature },
      },
      (response) => {
        response.resume();
        resolve(response.statusCode);
      },
    );
    request.once('error', reject);
    request.end(body);
  });
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('listeners and webhooks in the real server process', () => {
  it('runs the listener (restarting it after a crash), serves signed webhooks and stops cleanly', async () => {
    await using dir = await tempDir();
    const port = await freePort();
    await dir.write('secrets.yaml', `hooky_secret: ${secret}\n`, 0o600);
    const config = await dir.write(
      'config.yaml',
      `data_dir: ./data
server: {host: 127.0.0.1, port: ${port}}
integration_dirs: [${JSON.stringify(hooky)}]
integrations:
  - {type: hooky, name: hooks, webhook_secret: !secret hooky_secret, crash_first: true}
  - {type: hooky, name: sleepy, enabled: false, webhook_secret: !secret hooky_secret}
`,
    );
    const dataDir = path.join(dir.path, 'data');
    const server = startNode({ args: [serverMain, '--config', config] });
    const pid = server.child.pid ?? 0;
    try {
      await server.waitForOutput(/listening on http:\/\/127\.0\.0\.1:\d+/);
      const token = await readApiToken(dataDir);
      const api = `http://127.0.0.1:${port}`;
      const authorized = fetchWithToken(token);

      // The listener enqueued a tick, crashed, was restarted after the backoff, and enqueued its second tick.
      const ticks = await waitUntil(
        async () => {
          const files = await pendingOf(dataDir, 'hooky.tick');
          return files.length >= 2 ? files : undefined;
        },
        { what: 'two hooky.tick task files in pending/ (before and after the restart)' },
      );
      expect(ticks.join('\n')).toMatch(/run: 1[\s\S]*run: 2/);
      expect(ticks[0]).toMatch(/integration: hooks/);
      expect(server.stdout()).toContain(
        'listener hooks/poll stopped unexpectedly (simulated crash); restarting in 1000 ms',
      );
      // A task type of another domain is refused, and nothing of it reaches the queue.
      expect(server.stdout()).toContain('foreign enqueue refused: `system.echo` belongs to the system integration');
      expect(await pendingOf(dataDir, 'system.echo')).toEqual([]);

      const health = healthDetails.parse(
        await waitUntil(
          async () => {
            const body = healthDetails.parse(await (await authorized(`${api}/health`)).json());
            return body.listeners.find((one) => one.id === 'hooks/poll')?.state === 'running' ? body : undefined;
          },
          { what: 'the listener running again in /health' },
        ),
      );
      // The builtin chat instance's Telegram, Matrix, Discord, Slack and email listeners run too: idle, without a token.
      expect(health.listeners).toEqual([
        {
          id: 'hooks/poll',
          state: 'running',
          restarts: 1,
          last_error: 'simulated crash',
          last_error_at: expect.any(String),
        },
        { id: 'chat/telegram', state: 'running', restarts: 0 },
        { id: 'chat/matrix', state: 'running', restarts: 0 },
        { id: 'chat/discord', state: 'running', restarts: 0 },
        { id: 'chat/slack', state: 'running', restarts: 0 },
        { id: 'chat/email', state: 'running', restarts: 0 },
      ]);
      // Without the token /health says nothing about listeners.
      expect(await (await fetch(`${api}/health`)).json()).not.toHaveProperty('listeners');

      // A correctly signed delivery, without the API token: 202 and a task.
      const body = JSON.stringify({ action: 'opened', number: 7 });
      const hook = `${api}/api/integrations/hooks/hooks/deliveries`;
      const post = (headers: Record<string, string>, text = body, url = hook) =>
        fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: text });
      const accepted = await post({ 'x-hub-signature-256': sign(body), 'x-github-event': 'pull_request' });
      expect(accepted.status).toBe(202);
      const { task } = z.object({ task: z.string() }).parse(await accepted.json());
      const deliveries = await pendingOf(dataDir, 'hooky.delivery');
      expect(deliveries).toHaveLength(1);
      expect(deliveries[0]).toContain(`id: ${task}`);
      expect(deliveries[0]).toContain('event: pull_request');
      // The body reached the handler byte for byte, whatever the content type (GitHub may send a form).
      const form = 'payload=%7B%22a%22%3A1%7D';
      const formPosted = await post(
        { 'content-type': 'application/x-www-form-urlencoded', 'x-hub-signature-256': sign(form) },
        form,
      );
      expect(formPosted.status).toBe(202);
      expect((await pendingOf(dataDir, 'hooky.delivery')).join('\n')).toContain(form);

      // Wrong, missing or foreign-keyed signatures never reach the handler, and the answer names nothing: not the
      // instance, not the setting (the server log does).
      const notAuthenticated = {
        error: {
          code: 'UNAUTHORIZED',
          message: 'the request is not authenticated for this webhook (the server log says why)',
        },
      };
      for (const headers of [
        { 'x-hub-signature-256': sign(`${body} `) },
        { 'x-hub-signature-256': sign(body, 'another-secret') },
        { 'x-hub-signature-256': 'sha256=00' },
        {},
        { authorization: `Bearer ${token}` },
      ]) {
        const refused = await post(headers);
        expect(refused.status, JSON.stringify(headers)).toBe(401);
        expect(await refused.json()).toEqual(notAuthenticated);
      }
      expect(server.stdout()).toContain('the x-hub-signature-256 signature does not match the body');
      expect(await pendingOf(dataDir, 'hooky.delivery')).toHaveLength(2);

      // Without a valid credential an unknown instance, an unknown hook, a disabled instance, a method the hook does
      // not take and a failed authentication all look the same: webhooks cannot be probed. With the token, the
      // first three are one 404 and the method is a 405; a signed request learns the method too.
      for (const url of [
        `${api}/api/integrations/nobody/hooks/deliveries`,
        `${api}/api/integrations/hooks/hooks/nothing`,
        `${api}/api/integrations/sleepy/hooks/deliveries`,
      ]) {
        const probed = await post({ 'x-hub-signature-256': sign(body) }, body, url);
        expect(probed.status, url).toBe(401);
        expect(await probed.json()).toEqual(notAuthenticated);
        expect((await post({ authorization: `Bearer ${token}` }, body, url)).status, url).toBe(404);
      }
      expect(server.stdout()).toContain(
        'webhook request refused: no enabled webhook at /api/integrations/nobody/hooks/deliveries',
      );
      const getHook = await fetch(hook);
      expect(getHook.status).toBe(401);
      expect(await getHook.json()).toEqual(notAuthenticated);
      expect((await authorized(hook)).status).toBe(405);
      const signedPut = await fetch(hook, { method: 'PUT', headers: { 'x-hub-signature-256': sign(body) }, body });
      expect(signedPut.status).toBe(405);
      expect((await fetch(hook, { method: 'PUT', headers: { 'x-hub-signature-256': sign('') }, body })).status).toBe(
        401,
      );
      const large = 'x'.repeat(5000);
      expect((await post({ 'x-hub-signature-256': sign(large) }, large)).status).toBe(413);
      // A foreign Host is refused before anything else, as on every route.
      // (fetch will not send another Host, so node:http does.)
      expect(await statusWithHost(port, 'evil.example', body, sign(body))).toBe(421);

      // `auth: token` webhooks take the API token.
      const manual = `${api}/api/integrations/hooks/hooks/manual`;
      // Without the token a method the hook does not take is the same 401: the token is checked first.
      for (const method of ['PUT', 'GET', 'DELETE']) {
        const refused = await fetch(manual, { method, ...(method === 'PUT' ? { body: 'abc' } : {}) });
        expect(refused.status, method).toBe(401);
        expect(await refused.json()).toEqual(notAuthenticated);
      }
      expect((await authorized(manual, { method: 'DELETE' })).status).toBe(405);
      // The handler never sees the caller's credentials: not the token's header, nor cookies, nor any header that
      // carries the token.
      const answered = await authorized(manual, {
        method: 'PUT',
        headers: {
          'content-type': 'text/plain',
          cookie: 'session=abc',
          'proxy-authorization': 'Basic dXNlcjpwYXNz',
          'x-forwarded-token': `token=${token}`,
          'x-kept': 'yes',
        },
        body: 'abc',
      });
      expect(answered.status).toBe(200);
      const seen = z
        .object({ method: z.string(), bytes: z.number(), headers: z.array(z.string()) })
        .parse(await answered.json());
      expect(seen).toMatchObject({ method: 'PUT', bytes: 3 });
      expect(seen.headers).toContain('x-kept');
      for (const name of ['authorization', 'cookie', 'proxy-authorization', 'x-forwarded-token']) {
        expect(seen.headers).not.toContain(name);
      }
      // Nor does a secret value leave in the handler's answer.
      const leaked = await authorized(`${manual}?leak=1`, { method: 'POST', body: '' });
      expect(leaked.status).toBe(502);
      expect(await leaked.json()).toEqual({ upstream: 'refused key [secret]' });
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGTERM');
    }
    const run = await server.exited;
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('poll loop saw the shutdown');
    expect(run.stdout).toContain('listener hooks/poll stopped"');
    expect(run.stdout).not.toContain('did not stop within');
    expect(isRunning(pid)).toBe(false);
  });
});

describe('broken listener and webhook handlers', () => {
  it('stop the server before it listens when a module of an enabled instance is missing or outside its folder', async () => {
    await using dir = await tempDir();
    const port = await freePort();
    const config = await dir.write(
      'config.yaml',
      `data_dir: ./data
server: {host: 127.0.0.1, port: ${port}}
integration_dirs: [${JSON.stringify(misplaced)}, ${JSON.stringify(hooky)}]
integrations:
  - {type: misplaced, name: placed}
  - {type: hooky, name: hooks}
`,
    );
    const run = await runNode({ args: [serverMain, '--config', config], cwd: dir.path });
    expect(run.code).toBe(2);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const fatal = z
      .object({ level: z.literal(60), code: z.string(), msg: z.string() })
      .parse(JSON.parse(lines[0] ?? ''));
    expect(fatal.code).toBe('MANIFEST_INVALID');
    const shown = path.join(misplaced, 'manifest.yaml');
    expect(fatal.msg.split('\n')).toEqual([
      'invalid integration manifest (2 problems):',
      `${shown}:7:10: listeners.poll.handler: ./src/absent.ts does not exist`,
      `${shown}:10:5: webhooks.escape.handler: ./../hooky/src/hooky.ts#receive is outside the integration's folder`,
      expect.stringMatching(/^hint: fix the handler reference or the module; .*the server \(listeners and webhooks\)/),
    ]);
    // Refused before it made anything: no data directory, no token, no listener started.
    expect(await readdir(dir.path)).toEqual(['config.yaml']);
  });

  it('leave the server alone while the only instance of their integration is disabled', async () => {
    await using dir = await tempDir();
    const port = await freePort();
    const config = await dir.write(
      'config.yaml',
      `data_dir: ./data
server: {host: 127.0.0.1, port: ${port}}
integration_dirs: [${JSON.stringify(misplaced)}]
integrations:
  - {type: misplaced, name: placed, enabled: false}
`,
    );
    const server = startNode({ args: [serverMain, '--config', config] });
    try {
      await server.waitForOutput(/listening on http:\/\/127\.0\.0\.1:\d+/);
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGTERM');
    }
    const run = await server.exited;
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain('MANIFEST_INVALID');
  });
});
