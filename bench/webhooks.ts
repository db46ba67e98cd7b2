// Signed webhooks: `npm run bench:webhooks -- --messages 300 [--json]`.
// An in-process server with the chat instance's `signed` hook, over real loopback HTTP: each message is signed,
// POSTed, verified, stored durably in the inbox and its turn enqueued before the 202; every third one is sent again
// with the same webhook-id (a sender's retry), which must come back as the same message. Prints the time to a 202 for
// new messages and for retries (p50/p95), and the cost of one sign + verify. Prints figures; never fails for being
// slow, exits non-zero only when something broke (a refused message, a retry that became a second message).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '@assistant/config';
import { IntegrationRegistry } from '@assistant/integration-host';
import { discoverIntegrations } from '@assistant/manifests';
import { verifyWebhook, webhookHeaders } from '@assistant/outbound';
import { installation } from '@assistant/process';
import { createServer } from '@assistant/server';
import { machineLine } from './bench-processes.ts';

const { values } = parseArgs({
  options: { messages: { type: 'string', default: '300' }, json: { type: 'boolean', default: false } },
});
const messageCount = Number(values.messages);
if (!Number.isInteger(messageCount) || messageCount < 1 || messageCount > 10_000) {
  throw new Error(`--messages expects a whole number from 1 to 10000, got \`${values.messages}\``);
}
const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-webhooks-'));
try {
  await writeFile(path.join(dir, 'secrets.yaml'), `hook: ${secret}\n`, { mode: 0o600 });
  const configPath = path.join(dir, 'config.yaml');
  await writeFile(
    configPath,
    'data_dir: ./data\nserver: {port: 0}\nintegrations:\n  - {type: chat, name: chat, webhooks: {secret: !secret hook}}\n',
  );
  const { config } = await loadConfig({ configPath });
  const registry = new IntegrationRegistry({
    integrations: await discoverIntegrations({ builtinDir: installation.builtinIntegrationsDir }),
    config,
  });
  const app = createServer({ config, token: 'bench-token-for-the-webhooks-bench-0123', registry });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  const fresh: number[] = [];
  const retries: number[] = [];
  try {
    for (let index = 0; index < messageCount; index += 1) {
      const body = JSON.stringify({ text: `message ${index}`, peer: `peer-${index % 10}` });
      const id = `msg_bench_${index}`;
      const sends = index % 3 === 0 ? 2 : 1;
      let first: string | undefined;
      for (let send = 0; send < sends; send += 1) {
        const started = performance.now();
        const response = await fetch(`${address}/api/integrations/chat/hooks/signed`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...webhookHeaders({ secret, id, body }) },
          body,
        });
        const answer = (await response.json()) as { message?: string; duplicate?: boolean };
        (send === 0 ? fresh : retries).push(performance.now() - started);
        if (response.status !== 202) throw new Error(`message ${index}: ${response.status} ${JSON.stringify(answer)}`);
        if (send === 0) first = answer.message;
        else if (answer.message !== first || answer.duplicate !== true) {
          throw new Error(`message ${index}: the retry became ${JSON.stringify(answer)}, not ${first}`);
        }
      }
    }
  } finally {
    await app.close();
  }
  const body = JSON.stringify({ text: 'x'.repeat(1000) });
  const rounds = 20_000;
  const started = performance.now();
  for (let index = 0; index < rounds; index += 1) {
    verifyWebhook({ secret, body, headers: webhookHeaders({ secret, id: `msg_${index}`, body }) });
  }
  const signVerifyUs = ((performance.now() - started) * 1000) / rounds;
  fresh.sort((left, right) => left - right);
  retries.sort((left, right) => left - right);
  const figures = {
    messages: messageCount,
    retries: retries.length,
    acceptP50Ms: Number(percentile(fresh, 0.5).toFixed(2)),
    acceptP95Ms: Number(percentile(fresh, 0.95).toFixed(2)),
    retryP50Ms: Number(percentile(retries, 0.5).toFixed(2)),
    retryP95Ms: Number(percentile(retries, 0.95).toFixed(2)),
    signAndVerify1KiBUs: Number(signVerifyUs.toFixed(1)),
  };
  if (values.json) process.stdout.write(`${JSON.stringify(figures)}\n`);
  else {
    process.stdout.write(`${machineLine(dir)}\n`);
    process.stdout.write(
      `${messageCount} signed messages to a 202 (verified, stored, turn enqueued): p50 ${figures.acceptP50Ms} ms, p95 ${figures.acceptP95Ms} ms\n`,
    );
    process.stdout.write(
      `${retries.length} retries with the same webhook-id (same message back): p50 ${figures.retryP50Ms} ms, p95 ${figures.retryP95Ms} ms\n`,
    );
    process.stdout.write(`sign + verify of a 1 KiB body: ${figures.signAndVerify1KiBUs} µs\n`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
