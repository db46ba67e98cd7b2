// The signed-webhook channel's latency through both processes (`npm run bench:channels -- --channel webhook`): `assistant
// start` with a zero-latency fake model and an outbound endpoint that takes `reply`, and FakeWebhookRemote, which signs
// each message it POSTs to /hooks/signed and verifies the reply delivered back to it. Per trial: message → 202
// (stored durably, turn enqueued) and message → reply delivered at the remote, which is the webhook channel's "first
// visible token" (a webhook cannot be edited: the reply goes out whole). The reply path includes the worker's pick-up
// of the turn, the server's look at the webhook conversations' event logs (every 2 s) and the worker's pick-up of the
// `chat.webhook` delivery task. It prints figures and never fails for being slow.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { FakeWebhookRemote } from '../integrations/chat/src/testing/fake-webhook-remote.ts';
import { freePort } from '../tests/helpers/free-port.ts';
import { machineLine } from './bench-processes.ts';

const inboundSecret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const outboundSecret = 'whsec_c2VjcmV0LW9mLXRoZS1yZWNlaXZlci0wMTIzNDU2Nzg5';

export async function benchWebhookChannel(options: { trials: number; json: boolean }): Promise<void> {
  const cliMain = fileURLToPath(new URL('../apps/cli/src/main.ts', import.meta.url));
  const model = await FakeOpenAiServer.start({ respond: () => ({ text: 'Received, thank you.' }) });
  const remote = await FakeWebhookRemote.start({ secret: outboundSecret });
  const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-bench-webhook-channel-'));
  const port = await freePort();
  const config = path.join(directory, 'config.yaml');
  await writeFile(path.join(directory, 'secrets.yaml'), `in: ${inboundSecret}\nout: ${outboundSecret}\n`, {
    mode: 0o600,
  });
  await writeFile(
    config,
    `data_dir: ./data
memory: {consolidate: []}
llms:
  default: {base_url: "${model.url}", model: fake-model}
server: {port: ${port}}
worker: {shutdown_grace: 1s}
integrations:
  - type: chat
    name: chat
    webhooks:
      secret: !secret in
      outbound:
        - {name: remote, url: "${remote.url}", secret: !secret out, events: [reply], private_network: true}
`,
  );
  const child = spawn(process.execPath, [cliMain, 'start', '--config', config], {
    cwd: directory,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  try {
    const deadline = Date.now() + 60_000;
    while (!/worker ready/.test(output) || !/listening on/.test(output)) {
      if (Date.now() > deadline) throw new Error(`assistant start did not come up:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // The reply reader's first look notes where the logs end; replies after it are sent.
    while ((await readFile(path.join(directory, 'data/chat/webhook-replies.json'), 'utf8').catch(() => '')) === '') {
      if (Date.now() > deadline) throw new Error('the reply reader never looked');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const url = `http://127.0.0.1:${port}/api/integrations/chat/hooks/signed`;
    const accepted: number[] = [];
    const delivered: number[] = [];
    // One warm-up message: loads the handlers in the worker.
    for (let trial = -1; trial < options.trials; trial += 1) {
      const before = remote.handled('chat.reply').length;
      const started = performance.now();
      const answer = await remote.send({
        url,
        secret: inboundSecret,
        id: `msg_bench_${trial + 1}`,
        body: { text: `trial ${trial}`, peer: 'bench' },
      });
      const acceptedAt = performance.now();
      if (answer.status !== 202) throw new Error(`trial ${trial}: HTTP ${answer.status}`);
      const trialDeadline = Date.now() + 30_000;
      while (remote.handled('chat.reply').length === before) {
        if (Date.now() > trialDeadline) throw new Error(`trial ${trial}: no reply delivered in 30 s`);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      if (trial < 0) continue;
      accepted.push(acceptedAt - started);
      delivered.push(performance.now() - started);
    }
    const at = (values: number[], fraction: number) =>
      values[Math.min(values.length - 1, Math.floor(values.length * fraction))] ?? 0;
    accepted.sort((left, right) => left - right);
    delivered.sort((left, right) => left - right);
    const result = {
      trials: options.trials,
      machine: machineLine(directory),
      accepted: { p50Ms: at(accepted, 0.5), p95Ms: at(accepted, 0.95), maxMs: accepted.at(-1) ?? 0 },
      replyDelivered: { p50Ms: at(delivered, 0.5), p95Ms: at(delivered, 0.95), maxMs: delivered.at(-1) ?? 0 },
    };
    if (options.json) console.log(JSON.stringify(result, null, 2));
    else {
      console.log(`signed webhook channel, ${options.trials} messages through assistant start, zero-latency model`);
      console.log(`  ${result.machine}`);
      const line = (name: string, figures: { p50Ms: number; p95Ms: number; maxMs: number }) =>
        `  ${name}: p50 ${figures.p50Ms.toFixed(1)} ms, p95 ${figures.p95Ms.toFixed(1)} ms, max ${figures.maxMs.toFixed(1)} ms`;
      console.log(line('message → 202 (stored, turn enqueued)', result.accepted));
      console.log(line('message → reply delivered at the remote', result.replyDelivered));
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    await remote.close();
    await model.close();
    await rm(directory, { recursive: true, force: true });
  }
}
