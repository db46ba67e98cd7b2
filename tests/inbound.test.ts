import { createHmac } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { repoRoot, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const hooky = path.join(repoRoot, 'tests/fixtures/integrations/inbound/hooky');
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
            return body.listeners[0]?.state === 'running' ? body : undefined;
          },
          { what: 'the listener running again in /health' },
        ),
      );
      expect(health.listeners).toEqual([
        {
          id: 'hooks/poll',
          state: 'running',
          restarts: 1,
          last_error: 'simulated crash',
          last_error_at: expect.any(String),
        },
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

      // Wrong, missing or foreign-keyed signatures never reach the handler.
      for (const headers of [
        { 'x-hub-signature-256': sign(`${body} `) },
        { 'x-hub-signature-256': sign(body, 'another-secret') },
        { 'x-hub-signature-256': 'sha256=00' },
        {},
        { authorization: `Bearer ${token}` },
      ]) {
        const refused = await post(headers);
        expect(refused.status, JSON.stringify(headers)).toBe(401);
      }
      expect(await pendingOf(dataDir, 'hooky.delivery')).toHaveLength(2);

      // Unknown instance, unknown hook and a disabled instance look the same; the method and the size are checked.
      for (const url of [
        `${api}/api/integrations/nobody/hooks/deliveries`,
        `${api}/api/integrations/hooks/hooks/nothing`,
        `${api}/api/integrations/sleepy/hooks/deliveries`,
      ]) {
        expect((await post({ 'x-hub-signature-256': sign(body) }, body, url)).status, url).toBe(404);
      }
      expect((await fetch(hook)).status).toBe(405);
      const large = 'x'.repeat(5000);
      expect((await post({ 'x-hub-signature-256': sign(large) }, large)).status).toBe(413);
      // A foreign Host is refused before anything else, as on every route.
      // (fetch will not send another Host, so node:http does.)
      expect(await statusWithHost(port, 'evil.example', body, sign(body))).toBe(421);

      // `auth: token` webhooks take the API token.
      const manual = `${api}/api/integrations/hooks/hooks/manual`;
      expect((await fetch(manual, { method: 'PUT', body: 'abc' })).status).toBe(401);
      const answered = await authorized(manual, {
        method: 'PUT',
        headers: { 'content-type': 'text/plain' },
        body: 'abc',
      });
      expect(answered.status).toBe(200);
      expect(await answered.json()).toEqual({ method: 'PUT', bytes: 3 });
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
