// 2,000 chat event streams held open against the real server process (`assistant serve`) over loopback: /health still
// answers, an event written to each conversation reaches every stream of it, and the stream one past
// `server.event_streams_per_client` is refused with 429 EVENT_STREAMS_FULL and `retry-after`.
import http from 'node:http';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

/** How long one stream request may wait for the server's answer on a loaded machine. */
const streamAnswerTimeoutMs = 20_000;

const streams = 2_000;
const conversations = 20;
/** How long /health may take to answer while the streams are open: a bounded wait, not a speed goal. */
const healthWaitMs = 10_000;

interface OpenStream {
  conversation: string;
  text: () => string;
  close: () => void;
}

/** Opens one event stream with node:http (no pooling: each its own connection) and keeps what it receives. */
function openStream(options: { port: number; token: string; conversation: string }): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const request = http.get(
      {
        host: '127.0.0.1',
        port: options.port,
        path: `/api/chats/${options.conversation}/events`,
        headers: { authorization: `Bearer ${options.token}` },
        agent: false,
      },
      (response) => {
        if (response.statusCode !== 200) {
          response.resume();
          reject(new Error(`stream of ${options.conversation}: HTTP ${response.statusCode}`));
          return;
        }
        let received = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          received += chunk;
        });
        response.on('error', () => {});
        resolve({ conversation: options.conversation, text: () => received, close: () => request.destroy() });
      },
    );
    request.on('error', reject);
    // The wait is on the response event above; this only bounds it, so a server that never answers fails the test.
    request.setTimeout(streamAnswerTimeoutMs, () =>
      request.destroy(new Error(`no answer to the stream request in ${streamAnswerTimeoutMs} ms`)),
    );
  });
}

describe('many chat event streams on the real server', () => {
  it('holds 2,000 open streams: /health answers, events reach every stream, one more gets 429', {
    timeout: 180_000,
  }, async () => {
    await using dir = await tempDir();
    const port = await freePort();
    const configPath = await dir.write(
      'config.yaml',
      `data_dir: ./data\nserver:\n  port: ${port}\n  event_streams_per_client: ${streams}\n`,
    );
    const server = startNode({ args: [cliMain, 'serve', '--config', configPath], cwd: dir.path });
    const open: OpenStream[] = [];
    try {
      await server.waitForOutput(/listening on/, { timeoutMs: 25_000 });
      const token = await readApiToken(path.join(dir.path, 'data'));
      const base = `http://127.0.0.1:${port}`;
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const ids: string[] = [];
      for (let index = 0; index < conversations; index += 1) {
        const created = await fetch(`${base}/api/chats`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ title: `streams ${index}` }),
        });
        ids.push(z.object({ id: z.string() }).parse(await created.json()).id);
      }

      // Opened 100 at a time; each stream has answered 200 with its first comment before the next batch.
      for (let start = 0; start < streams; start += 100) {
        const batch = Array.from({ length: Math.min(100, streams - start) }, (_, offset) =>
          openStream({ port, token, conversation: ids[(start + offset) % conversations] ?? '' }),
        );
        open.push(...(await Promise.all(batch)));
      }
      await waitUntil(() => open.every((stream) => stream.text().includes(': events of conversation')), {
        what: 'every stream to send its first comment',
        timeoutMs: 60_000,
      });

      // With every stream open and idle, the server still answers /health.
      const health = await fetch(`${base}/health`, { signal: AbortSignal.timeout(healthWaitMs) });
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: expect.any(String) });

      // One stream more than the client may hold: refused, with when to try again, and nothing opened.
      const refused = await fetch(`${base}/api/chats/${ids[0]}/events`, {
        headers,
        signal: AbortSignal.timeout(healthWaitMs),
      });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('EVENT_STREAMS_FULL');

      // A message posted to each conversation reaches every one of its streams.
      for (const id of ids) {
        const posted = await fetch(`${base}/api/chats/${id}/messages`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ text: `hello ${id}` }),
        });
        expect(posted.status).toBe(202);
      }
      await waitUntil(() => open.every((stream) => stream.text().includes(`event: message`)) || undefined, {
        what: 'the message event on all 2,000 streams',
        timeoutMs: 60_000,
      });
      for (const stream of open) expect(stream.text()).toContain(`"text":"hello ${stream.conversation}"`);

      // And /health once more, now that every stream has been written to.
      const after = await fetch(`${base}/health`, { signal: AbortSignal.timeout(healthWaitMs) });
      expect(after.status).toBe(200);
    } finally {
      for (const stream of open) stream.close();
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });
});
