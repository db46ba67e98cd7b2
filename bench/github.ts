// The GitHub integration's two speeds (issue 18):
// 1. Webhook latency: the real server (apps/server) with one GitHub instance; each trial POSTs a correctly signed
//    pull_request delivery (a new X-GitHub-Delivery id each time) and measures the time to the 202, by which the
//    `github.pull_requests.collect` task file is already in pending/ (checked on every trial). Goal: ≤ 100 ms.
// 2. Full cycles: N pull requests on the fake GitHub, a zero-latency fake model, a rule that labels each,
//    `assistant trigger` and `assistant work --exit-when-idle`, three times: the first reads, classifies and labels
//    everything; the second re-reads what the labels changed (updated_at), without asking the model again; the third
//    finds nothing changed (a 304). Prints the wall time, GitHub requests and model calls of each.
// `npm run bench:github [-- --trials 200 --items 50 --json]`. It prints figures; it never fails for being slow.

import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { FakeGithub, signWebhook } from '@assistant/integration-github/testing';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { freePort } from '../tests/helpers/free-port.ts';

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '200' },
    items: { type: 'string', default: '50' },
    json: { type: 'boolean', default: false },
  },
});
const trials = Number(values.trials);
const items = Number(values.items);
const root = fileURLToPath(new URL('..', import.meta.url));
const cliMain = path.join(root, 'apps/cli/src/main.ts');
const serverMain = path.join(root, 'apps/server/src/main.ts');
const secret = 'bench-webhook-secret';

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

function run(args: string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

const github = await FakeGithub.start({ user: 'octo-owner' });
for (let number = 1; number <= items; number += 1) {
  github.addPull({
    owner: 'acme',
    repo: `repo-${number % 10}`,
    number,
    title: `Change ${number}`,
    body: `Please review change ${number}.`,
    user: 'alice',
    requested_reviewers: ['octo-owner'],
  });
  github.addComment('acme', `repo-${number % 10}`, number, { user: 'bob', body: 'Looks fine to me.' });
}
const model = await FakeOpenAiServer.start({
  respond: () => ({
    json: { needs_my_review: true, urgent: false, trivial_change: false, blocked: false, question_for_me: false },
  }),
});
const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-bench-github-'));
const port = await freePort();
await writeFile(
  path.join(directory, 'secrets.yaml'),
  `github_token: ${github.token}\ngithub_webhook_secret: ${secret}\n`,
  { mode: 0o600 },
);
await writeFile(
  path.join(directory, 'config.yaml'),
  `data_dir: ./data
llms:
  default: {base_url: "${model.url}", model: fake-model}
server: {port: ${port}}
integrations:
  - type: github
    name: work
    token: !secret github_token
    webhook_secret: !secret github_webhook_secret
    api_url: ${github.apiUrl}
    orgs: [acme]
    limit: 1000
    platforms:
      pull_requests:
        automations:
          - name: label reviews
            when: {needs_my_review: true}
            then: {label: review}
      issues: {enabled: false}
`,
);

const results: Record<string, unknown> = { trials, items };
const server = spawn(process.execPath, [serverMain, '--config', path.join(directory, 'config.yaml')], {
  stdio: ['ignore', 'pipe', 'pipe'],
});
let serverOutput = '';
server.stdout.on('data', (chunk: Buffer) => {
  serverOutput += chunk.toString();
});
try {
  const deadline = Date.now() + 60_000;
  while (!/listening on/.test(serverOutput)) {
    if (Date.now() > deadline) throw new Error(`the server did not come up:\n${serverOutput}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const hook = `http://127.0.0.1:${port}/api/integrations/work/hooks/events`;
  const pending = path.join(directory, 'data/queue/pending');
  const latencies: number[] = [];
  for (let trial = -10; trial < trials; trial += 1) {
    const number = (Math.abs(trial) % items) + 1;
    const delivery = github.delivery('pull_request.synchronize', {
      owner: 'acme',
      repo: `repo-${number % 10}`,
      number,
    });
    const started = performance.now();
    const response = await fetch(hook, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': delivery.event,
        'x-github-delivery': `bench-${trial}`,
        'x-hub-signature-256': signWebhook(secret, delivery.body),
      },
      body: delivery.body,
    });
    const body = (await response.json()) as { enqueued?: string[]; duplicates?: number };
    const elapsed = performance.now() - started;
    if (response.status !== 202) throw new Error(`trial ${trial}: HTTP ${response.status}`);
    const id = body.enqueued?.[0];
    if (id && !(await readdir(pending)).some((name) => name.includes(id))) {
      throw new Error(`trial ${trial}: task ${id} is not in pending/ at the 202`);
    }
    if (trial >= 0) latencies.push(elapsed);
  }
  latencies.sort((left, right) => left - right);
  results.webhook_ms = {
    p50: Number(percentile(latencies, 0.5).toFixed(1)),
    p95: Number(percentile(latencies, 0.95).toFixed(1)),
    max: Number((latencies.at(-1) ?? Number.NaN).toFixed(1)),
  };
} finally {
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('close', resolve));
}

// The deliveries left collect tasks behind: start the cycles from an empty queue.
await rm(path.join(directory, 'data/queue'), { recursive: true, force: true });
for (const cycle of ['first', 'second', 'third'] as const) {
  const requestsBefore = github.requests.length;
  const modelBefore = model.requests.length;
  const started = performance.now();
  const triggered = await run([cliMain, 'trigger', 'work', 'pull_requests'], directory);
  if (triggered.code !== 0) throw new Error(triggered.output);
  const worked = await run([cliMain, 'work', '--exit-when-idle'], directory);
  if (worked.code !== 0) throw new Error(worked.output);
  const seconds = (performance.now() - started) / 1000;
  const requests = github.requests.slice(requestsBefore);
  results[`${cycle}_cycle`] = {
    seconds: Number(seconds.toFixed(2)),
    github_requests: requests.length,
    github_requests_per_item: Number((requests.length / items).toFixed(2)),
    search_statuses: requests.filter((request) => request.path === '/search/issues').map((request) => request.status),
    model_calls: model.requests.length - modelBefore,
    labels_added: requests.filter((request) => request.method === 'POST' && request.path.endsWith('/labels')).length,
  };
}

await rm(directory, { recursive: true, force: true });
await github.close();
await model.close();

if (values.json) {
  console.log(JSON.stringify(results));
} else {
  const webhook = results.webhook_ms as { p50: number; p95: number; max: number };
  console.log(`webhook delivery → 202 with the collect task in pending/, ${trials} trials:`);
  console.log(`  p50 ${webhook.p50} ms, p95 ${webhook.p95} ms, max ${webhook.max} ms (goal ≤ 100 ms)`);
  for (const cycle of ['first', 'second', 'third']) {
    const figures = results[`${cycle}_cycle`] as Record<string, unknown>;
    console.log(
      `${cycle} cycle over ${items} pull requests: ${String(figures.seconds)} s, ${String(figures.github_requests)} GitHub requests (${String(figures.github_requests_per_item)} per item), searches ${JSON.stringify(figures.search_statuses)}, ${String(figures.model_calls)} model calls, ${String(figures.labels_added)} labels added`,
    );
  }
}
