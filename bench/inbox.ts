// An inbox through a local model: `npm run bench:inbox -- --messages 200 --latency 300 --concurrency 4 [--json]`,
// at the worker's defaults (no `max_in_flight`: the gate finds the model's parallelism) unless `--max-in-flight N`;
// `--workers 2` runs two installs (N messages each) whose workers share the model, and reports each one's drain.
// optionally with the model down midway: `--outage refuse --outage-for 60` (connections refused) or
// `--outage 429 --outage-for 10` (every request answered 429 with retry-after), starting once `--outage-after`
// (default 0.5) of the messages are classified.
// A Maildir of N messages made from the 20 test fixtures, the fake OpenAI-compatible server answering every request
// after `latency` ms with at most `concurrency` requests served at once (the rest wait, as a local model server
// queues them), then `assistant trigger bench inbox` and `assistant work --exit-when-idle` at the worker's defaults.
// It prints the time to drain, how busy the model was, the ideal time and the worker's peak memory (issue 20). It
// prints figures and never fails for being slow; it exits non-zero only when something broke.
import { readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { cliMain, machineLine, mib, repoRoot, residentBytes, runNode } from './bench-processes.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '200' },
    latency: { type: 'string', default: '300' },
    concurrency: { type: 'string', default: '4' },
    'max-in-flight': { type: 'string' },
    workers: { type: 'string', default: '1' },
    dir: { type: 'string', default: os.tmpdir() },
    outage: { type: 'string', default: 'none' },
    'outage-after': { type: 'string', default: '0.5' },
    'outage-for': { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const positiveInteger = (name: string, text: string, minimum: number): number => {
  const value = Number(text);
  if (!Number.isInteger(value) || value < minimum) {
    throw new Error(`--${name} expects a whole number of at least ${minimum}, got \`${text}\``);
  }
  return value;
};
const messageCount = positiveInteger('messages', values.messages, 1);
const latencyMs = positiveInteger('latency', values.latency, 0);
const modelConcurrency = positiveInteger('concurrency', values.concurrency, 1);
const maxInFlight =
  values['max-in-flight'] === undefined ? undefined : positiveInteger('max-in-flight', values['max-in-flight'], 1);
const workerCount = positiveInteger('workers', values.workers, 1);
const outage = values.outage;
if (outage !== 'none' && outage !== 'refuse' && outage !== '429') {
  throw new Error(`--outage is none, refuse or 429, got \`${outage}\``);
}
const outageAfter = Number(values['outage-after']);
if (!(outageAfter >= 0 && outageAfter < 1)) throw new Error('--outage-after is a fraction from 0 to below 1');
const outageForMs = positiveInteger('outage-for', values['outage-for'] ?? (outage === '429' ? '10' : '60'), 1) * 1000;
if (messageCount > 10_000) throw new Error(`--messages is at most 10000 (the email limit), got ${messageCount}`);
const log = (line: string) => {
  if (!values.json) process.stdout.write(`${line}\n`);
};

const fixtureDirectory = path.join(repoRoot, 'tests/fixtures/mail');

interface Judgement {
  human: boolean;
  requiresResponse: boolean;
  newsletter: boolean;
}

/** What a classifier should say about each fixture, by file name, from the fixture README's table. */
async function judgements(): Promise<Map<string, Judgement>> {
  const readme = await readFile(path.join(fixtureDirectory, 'README.md'), 'utf8');
  const table = readme.slice(
    readme.indexOf('## What a classifier should say'),
    readme.indexOf('## Deterministic facts'),
  );
  const byFile = new Map<string, Judgement>();
  for (const line of table.split('\n').filter((candidate) => /^\| `\d\d-/.test(candidate))) {
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    byFile.set((cells[0] ?? '').replaceAll('`', ''), {
      human: (cells[4] ?? '').startsWith('yes'),
      requiresResponse: (cells[5] ?? '').startsWith('yes'),
      newsletter: (cells[6] ?? '').startsWith('yes'),
    });
  }
  return byFile;
}

/**
 * Fixture `text` made into bench message `index`: its own Message-ID, ` #index` after the subject and a date
 * `index` minutes before `now`, so every message is distinct and inside the window. Only the header block changes.
 */
function variant(text: string, index: number, now: number): string {
  const split = text.search(/\r?\n\r?\n/);
  let headers = text.slice(0, split);
  const body = text.slice(split);
  const newline = headers.includes('\r\n') ? '\r\n' : '\n';
  // A header with its folded continuation lines.
  const header = (name: string) => new RegExp(`^${name}:.*(?:\\r?\\n[ \\t].*)*`, 'im');
  const set = (name: string, value: string) => {
    headers = header(name).test(headers)
      ? headers.replace(header(name), () => `${name}: ${value}`)
      : `${name}: ${value}${newline}${headers}`;
  };
  set('Message-ID', `<bench-${index}@inbox-bench.example>`);
  set('Date', new Date(now - index * 60_000).toUTCString().replace('GMT', '+0000'));
  headers = headers.replace(header('Subject'), (subject) => `${subject} #${index}`);
  return headers + body;
}

const byFile = await judgements();
const fixtureFiles = readdirSync(fixtureDirectory)
  .filter((name) => name.endsWith('.eml'))
  .sort();
const fixtureTexts = await Promise.all(fixtureFiles.map((name) => readFile(path.join(fixtureDirectory, name), 'utf8')));

// Requests whose subject named no bench message: answered as neutral, and reported, since they mean a changed prompt.
let unrecognised = 0;

// How many times each bench message was answered: more than once is a model call spent twice.
const answersByIndex = new Map<number, number>();
// The bench message each request asked about, by request index: delivered replies are counted through it.
const messageOfRequest = new Map<number, number>();

/** The classifier: finds the bench index in the fenced subject and answers what its fixture deserves. */
function classify(request: FakeChatRequest, requestIndex: number): FakeReply {
  const messages = Array.isArray(request.body.messages) ? (request.body.messages as { content?: unknown }[]) : [];
  const text = messages.map((message) => (typeof message.content === 'string' ? message.content : '')).join('\n');
  if (request.body.response_format === undefined) return { text: 'Thank you, I will get back to you soon.' };
  const subject = /<<<UNTRUSTED-\S+ subject>>>\n([\s\S]*?)\n<<<END/.exec(text)?.[1]?.trim() ?? '';
  const index = Number(/#(\d+)$/.exec(subject)?.[1] ?? Number.NaN);
  const judgement = Number.isInteger(index) ? byFile.get(fixtureFiles[index % fixtureFiles.length] ?? '') : undefined;
  if (judgement === undefined) unrecognised++;
  else {
    answersByIndex.set(index, (answersByIndex.get(index) ?? 0) + 1);
    messageOfRequest.set(requestIndex, index);
  }
  return {
    json: {
      human: judgement?.human ? 0.95 : 0.05,
      requires_response: judgement?.requiresResponse ?? false,
      newsletter: judgement?.newsletter ?? false,
      urgent: false,
    },
  };
}

async function countFiles(directory: string): Promise<number> {
  try {
    return (await readdir(directory)).length;
  } catch {
    return 0;
  }
}

const directory = await mkdtemp(path.join(path.resolve(values.dir), 'assistant-bench-inbox-'));
// One install (a Maildir, a config and a data directory) per worker; bench message `index` is global across them.
const installs = Array.from({ length: workerCount }, (_, worker) =>
  workerCount === 1 ? directory : path.join(directory, `worker-${worker + 1}`),
);
const totalMessages = messageCount * workerCount;
let keep = false;
const model = await FakeOpenAiServer.start({ respond: classify, latencyMs, concurrency: modelConcurrency });
try {
  const now = Date.now();
  for (const [worker, install] of installs.entries()) {
    for (const folder of ['', '.Archive', '.Junk', '.Drafts']) {
      for (const part of ['cur', 'new', 'tmp'])
        await mkdir(path.join(install, 'Maildir', folder, part), { recursive: true });
    }
    for (let offset = 0; offset < messageCount; offset++) {
      const index = worker * messageCount + offset;
      const text = variant(fixtureTexts[index % fixtureTexts.length] ?? '', index, now);
      await writeFile(path.join(install, 'Maildir/new', `${Math.floor(now / 1000)}.${index}.bench`), text);
    }
    // Two rules that need no model (on trusted authentication and on the sender's address) and one on a classification.
    await writeFile(
      path.join(install, 'config.yaml'),
      `data_dir: ./data
llms:
  default: {base_url: "${model.url}", model: fake-model${maxInFlight === undefined ? '' : `, max_in_flight: ${maxInFlight}`}}
# The bench measures classification: memory consolidation (a second, deferred model call per message) is off.
memory: {consolidate: []}
integrations:
  - type: email
    name: bench
    maildir: ./Maildir
    username: owner@example.test
    window: 3650d
    limit: 10000
    authserv_ids: [mx.example.test]
    platforms:
      inbox:
        automations:
          - {name: quarantine failed authentication, when: {authentication: fail}, then: {move: Junk}}
          - {name: read automated mail, when: {is_noreply: true}, then: mark_read}
          - {name: archive newsletters, when: {newsletter: true}, then: archive}
`,
    );
  }
  log(`inbox bench: ${machineLine(directory)}`);
  log(
    `${messageCount} messages${workerCount > 1 ? ` for each of ${workerCount} workers` : ''}, model latency ${latencyMs} ms, model concurrency ${modelConcurrency}, max_in_flight ${maxInFlight ?? "unset (the worker's default)"}`,
  );

  for (const install of installs) {
    const trigger = runNode([cliMain, 'trigger', 'bench', 'inbox'], { cwd: install });
    const triggered = await trigger.exited;
    if (triggered.code !== 0) throw new Error(`assistant trigger exited ${triggered.code}:\n${trigger.output()}`);
  }

  // The outage: started once enough messages are classified, ended after its duration.
  let outageWindow: { fromMs: number; toMs?: number } | undefined;
  const outageTimer =
    outage === 'none'
      ? undefined
      : setInterval(() => {
          if (outageWindow !== undefined || answersByIndex.size < totalMessages * outageAfter) return;
          outageWindow = { fromMs: Date.now() };
          const started =
            outage === 'refuse' ? model.refuseConnections() : model.failWith({ status: 429, retryAfterSeconds: 5 });
          void Promise.resolve(started).then(() =>
            setTimeout(() => {
              void model.recover().then(() => {
                if (outageWindow) outageWindow.toMs = Date.now();
              });
            }, outageForMs),
          );
        }, 50);
  const startedAt = Date.now();
  const works = installs.map((install) =>
    runNode(
      [...(process.env.BENCH_WORKER_NODE_FLAGS ?? '').split(' ').filter(Boolean), cliMain, 'work', '--exit-when-idle'],
      { cwd: install },
    ),
  );
  let peakResident = 0;
  const sample = () => {
    for (const work of works) peakResident = Math.max(peakResident, residentBytes(work.child.pid ?? 0) ?? 0);
  };
  sample();
  const sampler = setInterval(sample, 200);
  // Each worker's drain: from the common start to its exit.
  const workerDrainMs: number[] = [];
  const exits = await Promise.all(
    works.map((work, worker) =>
      work.exited.then((exit) => {
        workerDrainMs[worker] = Date.now() - startedAt;
        return exit;
      }),
    ),
  ).finally(() => {
    clearInterval(sampler);
    clearInterval(outageTimer);
  });
  const endedAt = Date.now();
  for (const [worker, worked] of exits.entries()) {
    if (worked.code !== 0) {
      throw new Error(
        `assistant work (${installs[worker]}) exited ${worked.code ?? worked.signal}:\n${works[worker]?.output().slice(-4000)}`,
      );
    }
  }

  if (process.env.BENCH_WORKER_LOG) {
    await writeFile(process.env.BENCH_WORKER_LOG, works.map((work) => work.output()).join('\n\n'));
  }
  const drainMs = endedAt - startedAt;
  // Requests the model served (those refused or answered 429 during an outage never reached it).
  const calls = model.served.length;
  const callsPerMessage = calls / totalMessages;
  // Tokens are estimated as characters / 4, for the messages' text and, separately, the response schema sent along.
  let messageCharacters = 0;
  let schemaCharacters = 0;
  for (const request of model.requests) {
    const messages = Array.isArray(request.body.messages) ? (request.body.messages as { content?: unknown }[]) : [];
    for (const message of messages) {
      messageCharacters +=
        typeof message.content === 'string' ? message.content.length : JSON.stringify(message.content ?? '').length;
    }
    if (request.body.response_format !== undefined)
      schemaCharacters += JSON.stringify(request.body.response_format).length;
  }
  const promptTokensPerMessage = messageCharacters / 4 / totalMessages;
  const schemaTokensPerMessage = schemaCharacters / 4 / totalMessages;
  const idealMs = (totalMessages * callsPerMessage * latencyMs) / modelConcurrency;
  const busyMs = model.busyMs(modelConcurrency, { fromMs: startedAt, toMs: endedAt });
  // The share of the drain with at least k requests being served, for k = 1 … C.
  const atLeast = Array.from({ length: modelConcurrency }, (_, level) =>
    drainMs > 0 ? model.busyMs(level + 1, { fromMs: startedAt, toMs: endedAt }) / drainMs : 0,
  );
  let failed = 0;
  let done = 0;
  let pendingLeft = 0;
  for (const install of installs) {
    const queueDirectory = path.join(install, 'data/queue');
    failed += await countFiles(path.join(queueDirectory, 'failed'));
    done += await countFiles(path.join(queueDirectory, 'done'));
    pendingLeft += await countFiles(path.join(queueDirectory, 'pending'));
  }
  // Every message classified once, and every one still somewhere in the Maildir (moved once, never lost).
  // Delivered replies only: one computed for a request the outage cut off never reached the worker.
  const deliveredByMessage = new Map<number, number>();
  for (const requestIndex of model.delivered) {
    const message = messageOfRequest.get(requestIndex);
    if (message !== undefined) deliveredByMessage.set(message, (deliveredByMessage.get(message) ?? 0) + 1);
  }
  const answeredTwice = [...deliveredByMessage.values()].filter((count) => count > 1).length;
  let classifiedNotes = 0;
  let mailLeft = 0;
  for (const install of installs) {
    const notesDirectory = path.join(install, 'data/notes/email/bench');
    for (const name of await readdir(notesDirectory).catch(() => [] as string[])) {
      if ((await readFile(path.join(notesDirectory, name), 'utf8')).includes('\nclassified_hash: ')) classifiedNotes++;
    }
    for (const folder of ['', '.Archive', '.Junk', '.Drafts']) {
      for (const part of ['cur', 'new']) mailLeft += await countFiles(path.join(install, 'Maildir', folder, part));
    }
  }
  const slowestMs = Math.max(...workerDrainMs);
  const fastestMs = Math.min(...workerDrainMs);
  const figures = {
    machine: machineLine(directory),
    messages: messageCount,
    workers: workerCount,
    maxInFlight: maxInFlight ?? null,
    latencyMs,
    modelConcurrency,
    drainSeconds: drainMs / 1000,
    workerDrainSeconds: workerDrainMs.map((milliseconds) => milliseconds / 1000),
    slowestOverFastestWorker: fastestMs > 0 ? slowestMs / fastestMs : null,
    modelBusyFraction: drainMs > 0 ? busyMs / drainMs : 0,
    modelAtLeastInFlightFractions: atLeast,
    peakInFlight: model.peakInFlight,
    peakOpenRequests: model.peakOpenRequests,
    outage: outage === 'none' ? null : { kind: outage, ...outageWindow },
    messagesAnsweredTwice: answeredTwice,
    notesClassified: classifiedNotes,
    messagesInMaildir: mailLeft,
    idealSeconds: idealMs / 1000,
    actualOverIdeal: idealMs > 0 ? drainMs / idealMs : null,
    modelCalls: calls,
    callsPerMessage,
    promptTokensPerMessage,
    schemaTokensPerMessage,
    peakWorkerResidentBytes: peakResident,
    tasksDone: done,
    tasksFailed: failed,
    tasksPendingLeft: pendingLeft,
    unrecognisedRequests: unrecognised,
  };
  const percent = (fraction: number) => `${(fraction * 100).toFixed(1)} %`;
  log('');
  log(`time to drain           ${figures.drainSeconds.toFixed(1)} s (assistant work --exit-when-idle, start to exit)`);
  log(
    `model busy              ${percent(figures.modelBusyFraction)} of it with ${modelConcurrency} in flight; at least 1, 2, …: ${atLeast.map(percent).join(', ')}; peak ${model.peakInFlight} in flight`,
  );
  const firstServedMs = model.served[0]?.startedAt;
  const lastEndedMs = Math.max(0, ...model.served.map((entry) => entry.endedAt ?? 0));
  if (firstServedMs !== undefined) {
    log(
      `model idle at the ends  ${((firstServedMs - startedAt) / 1000).toFixed(1)} s before the first request, ${((endedAt - lastEndedMs) / 1000).toFixed(1)} s after the last`,
    );
  }
  log(
    `requests open at once   at most ${model.peakOpenRequests} (sent by the worker${workerCount > 1 ? 's' : ''} and not yet answered; the model serves ${modelConcurrency})`,
  );
  if (workerCount > 1) {
    log(
      `each worker's drain     ${workerDrainMs.map((milliseconds) => `${(milliseconds / 1000).toFixed(1)} s`).join(', ')}; slowest ÷ fastest ${(slowestMs / Math.max(1, fastestMs)).toFixed(2)}`,
    );
  }
  if (outageWindow) {
    const lasted = ((outageWindow.toMs ?? endedAt) - outageWindow.fromMs) / 1000;
    log(
      `outage                  ${outage === 'refuse' ? 'connections refused' : 'every request answered 429'} for ${lasted.toFixed(1)} s, from ${((outageWindow.fromMs - startedAt) / 1000).toFixed(1)} s into the drain`,
    );
  } else if (outage !== 'none') log('outage                  never started (the drain ended first)');
  log(
    `classified              ${classifiedNotes} of ${totalMessages} notes; ${answeredTwice} messages answered more than once`,
  );
  log(`mail                    ${mailLeft} of ${totalMessages} messages in the Maildir's folders`);
  log(`ideal time              ${figures.idealSeconds.toFixed(1)} s (N × calls per message × L ÷ C)`);
  log(
    `actual ÷ ideal          ${figures.actualOverIdeal === null ? 'n/a (latency 0)' : figures.actualOverIdeal.toFixed(2)}`,
  );
  log(
    `model calls             ${calls} served (${callsPerMessage.toFixed(2)} per message), ${model.requests.length - calls} more answered with an error`,
  );
  log(
    `prompt tokens/message   ≈ ${promptTokensPerMessage.toFixed(0)} in the messages + ≈ ${schemaTokensPerMessage.toFixed(0)} in response_format (estimated as characters ÷ 4)`,
  );
  log(
    `peak worker RSS         ${mib(peakResident)} (VmRSS every 200 ms${workerCount > 1 ? ', the larger worker' : ''})`,
  );
  log(`tasks                   ${done} done, ${failed} failed, ${pendingLeft} still pending`);
  if (unrecognised > 0) log(`note: ${unrecognised} requests named no bench message and were answered as neutral`);
  if (values.json) process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  if (failed > 0 || pendingLeft > 0 || classifiedNotes !== totalMessages || mailLeft !== totalMessages) {
    process.stderr.write(
      `something broke: ${failed} tasks failed, ${pendingLeft} still pending, ${classifiedNotes} of ${totalMessages} classified, ${mailLeft} messages left; see ${directory}\n`,
    );
    process.exitCode = 1;
    keep = true;
  }
} catch (error) {
  keep = true;
  process.stderr.write(`the bench's files are kept in ${directory}\n`);
  throw error;
} finally {
  await model.close();
  if (!keep) await rm(directory, { recursive: true, force: true });
}
