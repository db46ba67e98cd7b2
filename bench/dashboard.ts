// Dashboard page weight and speed at 10,000 tasks and 10,000 notes: seeds a data directory (tasks in every state
// through the queue's API, email notes and approvals through the note store, 5,000 lines of today's human log),
// starts the server in this process on loopback, and asks each page with the Bearer token: HTML bytes (as sent,
// and gzipped), the first request's ms (pages are asked in order, so an index the first page starts may be warm by
// a later one), p50/p95 ms over the timed requests after a warm-up, and the first-load weight of the assets.
// `npm run bench:dashboard [-- --tasks 10000 --notes 10000 --log-lines 5000 --requests 20 --dir /path --json]`.
// It prints figures; it never fails for being slow (a page answering 404 is printed as such: not built yet).
// Results go in docs/performance.md ("Dashboard").
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { createApprovalRequest } from '@assistant/actions';
import { loadConfig } from '@assistant/config';
import { FileHumanLog, FileNoteStore } from '@assistant/notes';
import { assistantVersion } from '@assistant/process';
import { type ClaimedTask, openFileTaskQueue, UnrecoverableError } from '@assistant/queue';
import { createServer } from '@assistant/server';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '10000' },
    notes: { type: 'string', default: '10000' },
    'log-lines': { type: 'string', default: '5000' },
    requests: { type: 'string', default: '20' },
    dir: { type: 'string', default: os.tmpdir() },
    json: { type: 'boolean', default: false },
  },
});
const taskCount = Number(values.tasks);
const noteCount = Number(values.notes);
const logLines = Number(values['log-lines']);
const timedRequests = Number(values.requests);
const warmUp = 3;

const taskTypes = ['email.inbox.check', 'email.act', 'github.sync', 'system.echo', 'system.agent', 'chat.turn'];
const integrations = ['work', 'personal', 'oss'];

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

function progress(text: string): void {
  if (!values.json) process.stderr.write(`${text}\n`);
}

/**
 * Tasks in every state through the queue's own API: in batches, each enqueued and then mostly finished (70 % done,
 * 12 % failed), so the pending folder stays small while claiming; the last batch leaves pending tasks and a few
 * active ones, held by a consumer that stays alive (its worker file is current) until the bench ends.
 */
async function seedTasks(queueDirectory: string, dataDirectory: string) {
  const queue = await openFileTaskQueue({ directory: queueDirectory, dataDirectory });
  const consumer = queue.consumer({ pollIntervalMs: 50 });
  await consumer.start();
  const pendingShare = 0.175;
  const activeCount = Math.min(50, Math.floor(taskCount / 200));
  const finishing = Math.round(taskCount * (1 - pendingShare)) - activeCount;
  let made = 0;
  let finished = 0;
  const ids: string[] = [];
  const batch = 500;
  const enqueue = async (count: number) => {
    for (let index = 0; index < count; index += 1) {
      const number = made++;
      const outcome = await queue.enqueue({
        type: taskTypes[number % taskTypes.length] ?? 'system.echo',
        integration: integrations[number % integrations.length] ?? 'work',
        payload: { number, subject: `Message number ${number} about the quarterly report`, tags: ['bench'] },
        priority: number % 10,
        policies: false,
      });
      if (outcome.status === 'enqueued') ids.push(outcome.task.id);
    }
  };
  while (finished < finishing) {
    const count = Math.min(batch, finishing - finished);
    await enqueue(count);
    for (let index = 0; index < count; index += 1) {
      const claimed = await consumer.claim();
      if (!claimed) throw new Error('expected a ready task to claim');
      if (finished % 8 === 7)
        await consumer.fail(claimed, new UnrecoverableError(`bench failure ${finished}: <b>x</b>`));
      else await consumer.complete(claimed, { ok: true, number: finished });
      finished += 1;
    }
    progress(`  tasks: ${made} enqueued, ${finished} finished`);
  }
  await enqueue(taskCount - made);
  const held: ClaimedTask[] = [];
  for (let index = 0; index < activeCount; index += 1) {
    const claimed = await consumer.claim();
    if (claimed) held.push(claimed);
  }
  const stats = await queue.stats();
  return {
    stats,
    someId: ids[0] ?? '',
    async release() {
      for (const claimed of held) await consumer.release(claimed);
      await consumer.close();
      await queue.close();
    },
  };
}

/** Email-like notes under `email/<instance>/`, a few hand-written folders, and approval requests. */
async function seedNotes(root: string, humanLog: FileHumanLog): Promise<string> {
  const notes = new FileNoteStore({ root });
  const approvals = Math.min(200, Math.floor(noteCount / 50));
  const handWritten = Math.min(300, Math.floor(noteCount / 30));
  const emails = noteCount - approvals - handWritten;
  const concurrency = 32;
  const folders = ['projects', 'people', 'journal'];
  for (let start = 0; start < emails + handWritten; start += concurrency) {
    await Promise.all(
      Array.from({ length: Math.min(concurrency, emails + handWritten - start) }, (_, offset) => {
        const number = start + offset;
        if (number >= emails) {
          const folder = folders[number % folders.length] ?? 'projects';
          return notes.create(`${folder}/note-${number}.md`, {
            data: { title: `Note ${number}`, tags: ['bench'] },
            body: `# Note ${number}\n\nA hand-written note with a [link](https://example.com) and a list:\n\n- one\n- two\n`,
          });
        }
        const instance = integrations[number % 2] ?? 'work';
        return notes.create(`email/${instance}/${number}.md`, {
          data: {
            message_id: `<${number}@bench.example>`,
            uid: number,
            from: `Sender ${number % 97} <sender${number % 97}@example.com>`,
            subject: `Quarterly report ${number} <script>alert(1)</script>`,
            date: new Date(Date.now() - number * 60_000).toISOString(),
            status: number % 10 === 0 ? 'new' : 'read',
            classifications: { human: { value: (number % 100) / 100, confidence: 0.9 } },
          },
          body: `# Quarterly report ${number}\n\nHello,\n\nplease find the figures attached. Some text of a typical length for a short mail, about a few lines.\n\nRegards\n`,
        });
      }),
    );
    if (start % 2_000 < concurrency) progress(`  notes: ${start} written`);
  }
  for (let number = 0; number < approvals; number += 1) {
    const instance = integrations[number % 2] ?? 'work';
    const notePath = `email/${instance}/${number * 2 + (number % 2)}.md`;
    await createApprovalRequest({
      notes,
      humanLog,
      instance,
      domain: 'email',
      platform: 'email',
      notePath,
      item: { subject: `Quarterly report ${number}` },
      title: `Archive "Quarterly report ${number}"`,
      match: {
        rule: 'archive newsletters',
        ruleIndex: 0,
        provenance: 'llm',
        approval: true,
        reason: 'human < 0.2',
        actions: [{ kind: 'platform', name: 'archive', key: 'archive', tier: 'soft', yolo: false }],
      },
      expiresMs: 7 * 24 * 60 * 60 * 1_000,
      nowMs: Date.now(),
    });
  }
  return `email/work/${emails - 2}.md`;
}

async function timePage(
  url: string,
  token: string,
): Promise<{ status: number; bytes: number; gzipBytes: number; firstMs: number; p50Ms: number; p95Ms: number }> {
  const latencies: number[] = [];
  let firstMs = 0;
  let status = 0;
  let body = Buffer.alloc(0);
  for (let index = 0; index < warmUp + timedRequests; index += 1) {
    const started = performance.now();
    const response = await fetch(url, {
      headers: { authorization: `Bearer ${token}`, 'accept-encoding': 'identity' },
      redirect: 'manual',
    });
    body = Buffer.from(await response.arrayBuffer());
    status = response.status;
    if (index === 0) firstMs = performance.now() - started;
    if (index >= warmUp) latencies.push(performance.now() - started);
  }
  latencies.sort((left, right) => left - right);
  return {
    status,
    bytes: body.length,
    gzipBytes: gzipSync(body).length,
    firstMs,
    p50Ms: percentile(latencies, 0.5),
    p95Ms: percentile(latencies, 0.95),
  };
}

const directory = await mkdtemp(path.join(path.resolve(values.dir), 'assistant-bench-dashboard-'));
try {
  await writeFile(path.join(directory, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  const { config } = await loadConfig({ configPath: path.join(directory, 'config.yaml') });
  const seedStarted = performance.now();
  progress(`seeding ${taskCount} tasks, ${noteCount} notes, ${logLines} log lines in ${directory}`);
  const humanLog = new FileHumanLog({ directory: config.paths.logs });
  const tasks = await seedTasks(config.paths.queue, config.paths.dataDir);
  const notePath = await seedNotes(config.paths.notes, humanLog);
  for (let number = 0; number < logLines; number += 1) {
    await humanLog.write({
      source: number % 3 === 0 ? 'queue' : 'email/work',
      message: `archived "Quarterly report ${number} <script>alert(1)</script>" from sender${number % 97}@example.com`,
      reason: 'rule "archive newsletters": human < 0.2',
      link: `email/work/${number}.md`,
    });
  }
  const seedSeconds = (performance.now() - seedStarted) / 1_000;
  progress(`seeded in ${seedSeconds.toFixed(1)} s; ${JSON.stringify(tasks.stats).slice(0, 120)}…`);

  const token = 'bench-token-0123456789abcdefghijklmnop';
  const app = createServer({ config, token });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const pages = [
      '/',
      '/tasks',
      '/tasks?state=failed',
      '/tasks?q=quarterly',
      `/tasks/${tasks.someId}`,
      '/approvals',
      '/notes',
      '/notes?q=quarterly',
      '/notes?field=status%3Dnew',
      `/notes/${notePath}`,
      '/chat',
      '/log',
      '/config',
    ];
    const results: ({ page: string } & Awaited<ReturnType<typeof timePage>>)[] = [];
    for (const page of pages) {
      results.push({ page, ...(await timePage(`${address}${page}`, token)) });
      progress(`  ${page} done`);
    }
    const assets = [];
    for (const name of ['dashboard.css', 'dashboard.js', 'htmx.min.js', 'sse.min.js']) {
      const response = await fetch(`${address}/assets/${name}?v=${encodeURIComponent(assistantVersion)}`, {
        headers: { 'accept-encoding': 'identity' },
      });
      const body = Buffer.from(await response.arrayBuffer());
      assets.push({ asset: name, status: response.status, bytes: body.length, gzipBytes: gzipSync(body).length });
    }
    const machine = {
      cpu: os.cpus()[0]?.model ?? 'unknown',
      cores: os.availableParallelism(),
      memoryGiB: Math.round(os.totalmem() / 1024 ** 3),
      node: process.version,
      platform: `${os.platform()} ${os.release()}`,
    };
    if (values.json) {
      console.log(
        JSON.stringify({ machine, seedSeconds, tasks: taskCount, notes: noteCount, logLines, results, assets }),
      );
    } else {
      console.log(
        `Dashboard at ${taskCount} tasks, ${noteCount} notes, ${logLines} log lines today; ${timedRequests} timed requests per page after ${warmUp} warm-up`,
      );
      console.log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, Node ${machine.node}`);
      console.log('');
      console.log('| page | status | HTML KB | gzip KB | first ms | p50 ms | p95 ms |');
      console.log('|---|---|---|---|---|---|---|');
      for (const result of results) {
        const kb = (bytes: number) => (bytes / 1024).toFixed(1);
        const shown = result.page
          .replace(/\/tasks\/[0-9a-z]{26}/, '/tasks/<id>')
          .replace(/^\/notes\/.+\.md$/, '/notes/<note>');
        console.log(
          `| ${shown} | ${result.status === 404 ? '404 (not built)' : result.status} | ${kb(result.bytes)} | ${kb(result.gzipBytes)} | ${result.firstMs.toFixed(1)} | ${result.p50Ms.toFixed(1)} | ${result.p95Ms.toFixed(1)} |`,
        );
      }
      const total = assets.reduce((sum, asset) => sum + asset.bytes, 0);
      const totalGzip = assets.reduce((sum, asset) => sum + asset.gzipBytes, 0);
      console.log('');
      console.log(
        `first-load assets: ${assets.map((asset) => `${asset.asset} ${(asset.bytes / 1024).toFixed(1)} KB (${(asset.gzipBytes / 1024).toFixed(1)} gzip)`).join(', ')}; total ${(total / 1024).toFixed(1)} KB, ${(totalGzip / 1024).toFixed(1)} KB gzip`,
      );
    }
  } finally {
    await app.close();
    await tasks.release();
  }
} finally {
  await rm(directory, { recursive: true, force: true });
}
