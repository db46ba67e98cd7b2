// A model that goes away in the middle of a backlog strands nothing: classify tasks wait on the profile's breaker
// without spending attempts, rules that need no classification act while the model is down, and once it is back
// every message is classified exactly once and acted on once. The outage here is connections refused, as when the
// model server is stopped or the laptop sleeps; `npm run bench:inbox -- --outage refuse|429` measures the same at size.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { describe, expect, it } from 'vitest';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { readMailFixtures } from './helpers/imap-client.ts';
import { judgements } from './helpers/mail-judgements.ts';
import { cliMain, runCli, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const phishingSubject = 'URGENT: Your account has been suspended - verify within 24 hours';

describe('a model outage in the middle of a backlog', () => {
  it('waits for the model without failing anything, acts on model-free rules meanwhile, and classifies each message once', async () => {
    const fixtures = await readMailFixtures();
    const table = await judgements();
    // What each request asked about, and how often the model answered about each subject (computed; a reply cut off
    // by the outage was computed but never delivered, so the final count is of delivered replies).
    const subjects = new Map<number, string>();
    const answers = new Map<string, number>();
    await using model = await FakeOpenAiServer.start({
      latencyMs: 50,
      concurrency: 2,
      respond: (request: FakeChatRequest, index: number): FakeReply => {
        const messages = request.body.messages as { content: string }[];
        const text = messages.map((message) => message.content).join('\n');
        const subject = /<<<UNTRUSTED-\S+ subject>>>\n([\s\S]*?)\n<<<END/.exec(text)?.[1]?.trim() ?? '';
        subjects.set(index, subject);
        answers.set(subject, (answers.get(subject) ?? 0) + 1);
        const row = table.find((candidate) => candidate.subject === subject);
        return { json: { human: 0.05, requires_response: false, newsletter: row?.newsletter ?? false, urgent: false } };
      },
    });
    await using dir = await tempDir();
    for (const [index, fixture] of fixtures.entries()) {
      await dir.write(`Maildir/new/1795000000.${index}.test`, fixture.text);
    }
    // max_retries 0: without the breaker, every classify attempt during the outage would fail at once and the task
    // would be in failed/ after its three attempts, seconds into the outage.
    const port = await freePort();
    await dir.write(
      'config.yaml',
      `data_dir: ./data
server: {port: ${port}}
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${model.url}", model: fake-model, max_in_flight: 2, max_retries: 0}
worker:
  poll_interval: 100ms
integrations:
  - type: email
    name: local
    maildir: ./Maildir
    username: alice@example.test
    window: 3650d
    authserv_ids: [mx.example.test]
    platforms:
      inbox:
        automations:
          - {name: quarantine failed authentication, when: {authentication: fail}, then: {move: Junk}}
          - {name: archive newsletters, when: {newsletter: true}, then: archive}
`,
    );
    // At debug: the test counts the lines of each task put back, which the default level leaves out.
    const worker = startNode({
      args: [cliMain, 'work'],
      cwd: dir.path,
      env: { ASSISTANT_LOG_FORMAT: 'json', ASSISTANT_LOG_LEVEL: 'debug' },
    });
    const server = startNode({ args: [cliMain, 'serve'], cwd: dir.path });
    try {
      await server.waitForOutput(/listening on/, { timeoutMs: 60_000 });
      const api = fetchWithToken(await readApiToken(path.join(dir.path, 'data')));
      expect((await runCli(['trigger', 'local', 'inbox'], { cwd: dir.path })).code).toBe(0);
      await waitUntil(() => answers.size >= 4, { what: 'the first classifications', timeoutMs: 60_000 });
      await model.refuseConnections();
      const answeredBefore = [...answers.values()].reduce((sum, count) => sum + count, 0);

      // Down: the failed-authentication message (classified last, at priority 9) goes to Junk without the model.
      const junk = path.join(dir.path, 'Maildir/.Junk');
      await waitUntil(
        async () => {
          const names = [
            ...(await readdir(path.join(junk, 'cur')).catch(() => [])),
            ...(await readdir(path.join(junk, 'new')).catch(() => [])),
          ];
          return names.length === 1;
        },
        { what: 'the phishing message in Junk while the model is down', timeoutMs: 60_000 },
      );
      expect(answers.has(phishingSubject)).toBe(false);
      // The worker noticed: a classify task was put back to wait for the model, its attempt not spent.
      await worker.waitForOutput(
        /delayed until .*LLM profile default|waiting for the model|LLM_UNAVAILABLE|unavailable/i,
        {
          timeoutMs: 60_000,
        },
      );
      // The owner sees it: /health names the profile as unavailable with its backlog, /metrics says the breaker is open.
      const health = await waitUntil(
        async () => {
          const body = (await (await api(`http://127.0.0.1:${port}/health`)).json()) as {
            models?: { profile: string; state: string; backlog: number; max_in_flight: number | null }[];
          };
          const profile = body.models?.find((entry) => entry.profile === 'default');
          return profile && profile.state !== 'closed' && profile.backlog > 0 ? profile : undefined;
        },
        { what: '/health to show the default profile unavailable', timeoutMs: 60_000 },
      );
      expect(health).toMatchObject({ profile: 'default', max_in_flight: 2 });
      const metrics = await (await api(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toMatch(/^assistant_llm_breaker_open\{profile="default"\} 1$/m);
      // Down long enough for classify tasks to have been put back six times (the two in flight, then a trial after
      // each backoff): more than the three attempts each of the two in flight had, had they been spent.
      await waitUntil(() => (worker.stdout().match(/email\.inbox\.classify\) delayed until/g) ?? []).length >= 6, {
        what: 'six classify tasks put back to wait for the model',
        timeoutMs: 90_000,
      });
      expect(await readdir(path.join(dir.path, 'data/queue/failed'))).toEqual([]);
      expect([...answers.values()].reduce((sum, count) => sum + count, 0)).toBe(answeredBefore);

      await model.recover();
      await waitUntil(() => answers.size === fixtures.length, {
        what: 'every message classified after the model is back',
        timeoutMs: 120_000,
      });
      // The outage is one WARN line as it starts and one as it ends, however many tasks were put back meanwhile.
      await worker.waitForOutput(/LLM profile `default` \(\S+\) works again after/, { timeoutMs: 60_000 });
      const warned = (pattern: RegExp) =>
        worker
          .stdout()
          .split('\n')
          .filter((line) => line.includes('"level":40') && pattern.test(line));
      expect(warned(/LLM profile `default` \(\S+\) is failing: /)).toHaveLength(1);
      expect(warned(/LLM profile `default` \(\S+\) works again after/)).toHaveLength(1);
      await waitUntil(
        async () =>
          (await readdir(path.join(dir.path, 'data/queue/pending'))).length === 0 &&
          (await readdir(path.join(dir.path, 'data/queue/active'))).length === 0,
        { what: 'the queue to drain', timeoutMs: 60_000 },
      );
    } finally {
      worker.child.kill('SIGTERM');
      server.child.kill('SIGTERM');
      await Promise.all([worker.exited, server.exited]);
    }

    expect(await readdir(path.join(dir.path, 'data/queue/failed'))).toEqual([]);
    // Once each: no answer delivered twice for the same message.
    const delivered = new Map<string, number>();
    for (const index of model.delivered) {
      const subject = subjects.get(index) ?? '';
      delivered.set(subject, (delivered.get(subject) ?? 0) + 1);
    }
    expect([...delivered.entries()].filter(([, count]) => count !== 1)).toEqual([]);
    expect(delivered.size).toBe(fixtures.length);
    // At most the requests in flight when the connections were cut were computed and not delivered.
    expect([...answers.values()].reduce((sum, count) => sum + count, 0) - model.delivered.size).toBeLessThanOrEqual(2);
    const notesDirectory = path.join(dir.path, 'data/notes/email/local');
    const notes = await readdir(notesDirectory);
    expect(notes).toHaveLength(fixtures.length);
    for (const name of notes) {
      expect(await readFile(path.join(notesDirectory, name), 'utf8')).toMatch(/^classified_hash: /m);
    }
    // Acted on once: every newsletter archived, the phishing message in Junk, nothing lost or doubled.
    const count = async (folder: string) =>
      (await readdir(path.join(dir.path, 'Maildir', folder, 'cur')).catch(() => [])).length +
      (await readdir(path.join(dir.path, 'Maildir', folder, 'new')).catch(() => [])).length;
    const newsletters = table.filter((row) => row.newsletter && row.subject !== phishingSubject).length;
    expect(await count('.Archive')).toBe(newsletters);
    expect(await count('.Junk')).toBe(1);
    expect((await count('')) + (await count('.Archive')) + (await count('.Junk'))).toBe(fixtures.length);
  }, 300_000);
});
