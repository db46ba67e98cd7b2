// Secrets must not leak through errors: an LLM endpoint that echoes the Authorization header in its error body
// (raw, base64, JSON-escaped) must not put the token into data/, the logs of either process or the API's answers.
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { freePort } from './helpers/free-port.ts';
import { cliMain, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

/** Distinctive, and with characters that URL- and JSON-encoding change. */
const llmToken = 'sk-LEAK+/"\\q81Xk29PwZr7';
const otherLlmToken = 'sk-OTHER+/Tq55Vb03NmYe';
const mailPassword = 'mail-PW/+Jx77Rc4LzQe';

/**
 * The forms a secret travels in: raw, URL- and JSON-escaped, hex, and base64 at each of the three alignments it can
 * take inside a longer base64 text (`Bearer <token>` or `user:password`, base64-encoded): the characters of the
 * encoding that depend on the secret alone.
 */
function encodedForms(secret: string): string[] {
  const forms = [
    secret,
    encodeURIComponent(secret),
    JSON.stringify(secret).slice(1, -1),
    JSON.stringify(JSON.stringify(secret)).slice(1, -1),
    Buffer.from(secret).toString('hex'),
  ];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.from(`${'\0'.repeat(offset)}${secret}`).toString('base64');
    const stable = encoded.slice(Math.ceil((offset * 8) / 6), Math.floor(((offset + secret.length) * 8) / 6));
    forms.push(stable, stable.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return forms;
}

const secrets = { llmToken, otherLlmToken, mailPassword };

/** Every secret form found in `text`, named, for a readable failure. */
function leaks(where: string, text: string): string[] {
  const found: string[] = [];
  for (const [name, secret] of Object.entries(secrets)) {
    for (const form of encodedForms(secret)) {
      const at = text.indexOf(form);
      if (at >= 0)
        found.push(`${where}: ${name} as ${JSON.stringify(form)} in …${text.slice(Math.max(0, at - 80), at)}`);
    }
  }
  return found;
}

/** An endpoint (or a proxy in front of it) that quotes the Authorization header back in every error. */
function echoingEndpoint(request: FakeChatRequest): FakeReply {
  const authorization = request.headers.authorization ?? '';
  return {
    error: {
      status: 401,
      message: `invalid credentials: ${authorization} (base64 ${Buffer.from(authorization).toString('base64')}; as JSON ${JSON.stringify({ authorization })}; url ${encodeURIComponent(authorization)})`,
    },
  };
}

async function filesUnder(directory: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(directory, { withFileTypes: true }).catch(() => [])) {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) found.push(...(await filesUnder(full)));
    else if (entry.isFile()) found.push(full);
  }
  return found;
}

const taskList = z.object({ tasks: z.array(z.looseObject({ id: z.string(), type: z.string(), state: z.string() })) });

async function setup(dir: TempDir, llmUrl: string, port: number): Promise<string> {
  await dir.write(
    'secrets.yaml',
    `llm_token: '${llmToken}'\nother_llm_token: '${otherLlmToken}'\nmail_password: '${mailPassword}'\n`,
    0o600,
  );
  // One message in a local Maildir, so the email pipeline reaches its LLM classification.
  const now = new Date();
  await dir.write(
    'Mail/new/1700000000.M1P1.test',
    [
      'From: Ada <ada@example.com>',
      'To: owner@example.com',
      'Subject: Lunch on Friday?',
      `Date: ${now.toUTCString()}`,
      'Message-ID: <lunch-1@example.com>',
      '',
      'Shall we have lunch on Friday?',
      '',
    ].join('\r\n'),
  );
  await dir.write('Mail/cur/.keep', '');
  return dir.write(
    'config.yaml',
    `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${llmUrl}", model: fake-model, token: !secret llm_token, max_retries: 0, capabilities: {tools: true}}
  other: {base_url: "${llmUrl}", model: fake-model, token: !secret other_llm_token, max_retries: 0}
server: {host: 127.0.0.1, port: ${port}}
worker: {shutdown_grace: 2s, poll_interval: 100ms}
queue:
  policies:
    overrides:
      system.agent: {max_attempts: 1}
      email.inbox.classify: {max_attempts: 1}
integrations:
  - type: email
    name: mail
    maildir: ./Mail
    username: owner@example.com
    password: !secret mail_password
`,
  );
}

describe('secrets in errors', () => {
  it('hole 20: an LLM endpoint echoing the token leaks it into no file, log line or API response', async () => {
    await using model = await FakeOpenAiServer.start({ respond: echoingEndpoint });
    await using dir = await tempDir();
    const port = await freePort();
    const config = await setup(dir, model.url, port);
    const start = startNode({
      args: [cliMain, 'start', '--config', config],
      env: { ASSISTANT_LOG_LEVEL: 'debug', ASSISTANT_LOG_FORMAT: 'json' },
    });
    const responses: string[] = [];
    try {
      await start.waitForOutput(/^\[server\] .*listening on/m);
      await start.waitForOutput(/^\[worker\] .*worker ready/m);
      const api = `http://127.0.0.1:${port}`;
      // Another change may require a per-install API token (data/api-token); send it when there is one.
      const apiToken = await readFile(path.join(dir.path, 'data', 'api-token'), 'utf8').then(
        (text) => text.trim(),
        () => undefined,
      );
      const headers: Record<string, string> = apiToken ? { authorization: `Bearer ${apiToken}` } : {};
      const call = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
        const response = await fetch(`${api}${url}`, {
          method,
          headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await response.text();
        responses.push(`${method} ${url} → ${response.status}\n${text}`);
        return { status: response.status, text };
      };

      // Everything that asks the LLM: an agent loop on each profile, and the email pipeline's classification.
      const agent = await call('POST', '/api/tasks', { type: 'system.agent', payload: { prompt: 'hello' } });
      expect(agent.status).toBe(201);
      const other = await call('POST', '/api/tasks', {
        type: 'system.agent',
        payload: { prompt: 'hello', profile: 'other' },
      });
      expect(other.status).toBe(201);
      expect((await call('POST', '/api/integrations/mail/inbox/trigger')).status).toBeLessThan(300);

      // Wait until both agents are finished and the classification has failed.
      const finished = await waitUntil(
        async () => {
          const list = taskList.parse(JSON.parse((await call('GET', '/api/tasks?limit=100')).text));
          const agents = list.tasks.filter((task) => task.type === 'system.agent');
          const classify = list.tasks.find((task) => task.type === 'email.inbox.classify');
          const settled = (state: string | undefined) => state === 'done' || state === 'failed';
          return agents.length === 2 && agents.every((task) => settled(task.state)) && classify?.state === 'failed'
            ? list.tasks
            : undefined;
        },
        { what: 'both agents to finish and the classification to fail', timeoutMs: 40_000 },
      );
      // The endpoint did see (and echo) each token.
      expect(model.requests.map((request) => request.headers.authorization)).toEqual(
        expect.arrayContaining([`Bearer ${llmToken}`, `Bearer ${otherLlmToken}`]),
      );

      for (const task of finished) {
        await call('GET', `/api/tasks/${task.id}`);
        if (task.type === 'system.agent') await call('GET', `/api/tasks/${task.id}/events`);
      }
      await call('GET', '/api/tasks?state=failed');
      await call('GET', '/api/notes?q=invalid');
      await call('GET', '/health');
    } finally {
      start.child.kill('SIGTERM');
      await start.exited;
    }

    const found: string[] = [];
    const files = await filesUnder(path.join(dir.path, 'data'));
    expect(files.some((file) => file.includes(`${path.sep}failed${path.sep}`))).toBe(true);
    for (const file of files) {
      if ((await stat(file)).size > 20_000_000) continue;
      found.push(...leaks(path.relative(dir.path, file), await readFile(file, 'utf8')));
    }
    found.push(...leaks('stdout', start.stdout()), ...leaks('stderr', start.stderr()));
    for (const response of responses) found.push(...leaks('API', response));
    expect(found).toEqual([]);
    // The failures did happen and were recorded, only without the token.
    expect(responses.find((text) => text.includes('invalid credentials')) ?? '').toMatch(/Bearer \[secret\]/);
  });
});
