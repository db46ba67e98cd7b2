// Bounded growth (issue 38): simulated hours of mail, chat and tasks at a multiple of a heavy owner's rate, through
// the stores the server and worker use (the file queue with a consumer, notes, the chat inbox, event logs and
// transcript notes, the event ledger, the human log) and the housekeeping the worker runs every hour (queue prune,
// ledger prune, chat compaction), with the clock compressed: every store is given the simulated time, and files a
// pass wrote get it as their mtime, so retentions see simulated ages. Prints disk use per store and RSS at the start
// and the end, what bounds each store, and flags a store nothing bounds. Then opens, appends to and lists a
// conversation of --long messages. `npm run bench:growth [-- --hours 24 --scale 10 --long 10000 --json]`.
// In one process: the same store code the worker runs, not the worker's task loop (bench:queue measures that).
import { mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ChatEventLog, ChatInbox, ConversationStore, compactChat, defaultChatRetention } from '@assistant/chat';
import { EventLedger } from '@assistant/events';
import { FileHumanLog, FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { machineLine } from './bench-processes.ts';

const { values } = parseArgs({
  options: {
    hours: { type: 'string', default: '24' },
    scale: { type: 'string', default: '10' },
    long: { type: 'string', default: '10000' },
    'events-max-bytes': { type: 'string', default: String(defaultChatRetention.events.maxBytes) },
    dir: { type: 'string', default: os.tmpdir() },
    json: { type: 'boolean', default: false },
  },
});
const hours = Number(values.hours);
const scale = Number(values.scale);
const longMessages = Number(values.long);
const retention = {
  ...defaultChatRetention,
  events: { ...defaultChatRetention.events, maxBytes: Number(values['events-max-bytes']) },
};
for (const [name, value] of [
  ['hours', hours],
  ['scale', scale],
] as const)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} expects a number > 0`);

/** A heavy owner's day: mails received, chat messages sent (each answered), other tasks run. */
const heavyDay = { mails: 300, chat: 200, tasks: 500 };
const perHour = {
  mails: (heavyDay.mails * scale) / 24,
  chat: (heavyDay.chat * scale) / 24,
  tasks: (heavyDay.tasks * scale) / 24,
};
const hourMs = 3_600_000;
const conversations = 5;
/** Token events a reply streams (a reply of ~40 pieces). */
const tokensPerReply = 40;

const root = await mkdtemp(path.join(values.dir, 'assistant-bench-growth-'));
const data = path.join(root, 'data');
const startMs = Date.now();
let simulatedMs = startMs;
const now = () => simulatedMs;

/** Files and bytes under a folder, by the first level of sub-folders when `byChild`. */
async function usage(folder: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  const walk = async (current: string) => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(current, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(current, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile()) {
        files += 1;
        bytes += (await stat(full)).size;
      }
    }
  };
  await walk(folder);
  return { files, bytes };
}

/** Sets the mtime of files under `folder` changed since `sinceMs` (real time) to the simulated time. */
async function stampSimulated(folder: string, sinceMs: number): Promise<void> {
  let names: string[];
  try {
    names = await readdir(folder);
  } catch {
    return;
  }
  const when = new Date(simulatedMs);
  for (const name of names) {
    const file = path.join(folder, name);
    const info = await stat(file).catch(() => undefined);
    if (info?.isFile() && info.mtimeMs >= sinceMs) await utimes(file, when, when);
  }
}

const rssMb = () => Math.round(process.memoryUsage().rss / 1_048_576);

const queue = await openFileTaskQueue({ directory: path.join(data, 'queue'), now });
const consumer = queue.consumer({ heartbeatMs: 60_000, sweepIntervalMs: 3_600_000, pruneIntervalMs: 3_600_000 * 1000 });
await consumer.start();
const notes = new FileNoteStore({ root: path.join(data, 'notes') });
const inbox = new ChatInbox({ directory: path.join(data, 'chat', 'inbox'), now: () => new Date(simulatedMs) });
const events = new ChatEventLog({ directory: path.join(data, 'chat', 'events') });
const store = new ConversationStore({ notes, inbox, now: () => new Date(simulatedMs) });
const ledger = new EventLedger({ directory: path.join(data, 'events'), now });
const humanLog = new FileHumanLog({ directory: path.join(data, 'logs') });

const stores: Record<string, string> = {
  'queue/done': path.join(data, 'queue', 'done'),
  'queue/failed': path.join(data, 'queue', 'failed'),
  'queue/pending+active': path.join(data, 'queue', 'pending'),
  'notes/email': path.join(data, 'notes', 'email'),
  'notes/chats': path.join(data, 'notes', 'chats'),
  'chat/events': path.join(data, 'chat', 'events'),
  'chat/inbox': path.join(data, 'chat', 'inbox'),
  'events (ledger)': path.join(data, 'events'),
  logs: path.join(data, 'logs'),
};
/** What bounds each store, and the retention it holds at most (ms), or undefined when nothing does. */
const bounds: Record<string, { by: string; keepMs?: number; capBytes?: number }> = {
  'queue/done': { by: 'queue.retention.done (7d)', keepMs: 7 * 24 * hourMs },
  'queue/failed': { by: 'queue.retention.failed (30d)', keepMs: 30 * 24 * hourMs },
  'queue/pending+active': { by: 'drained by the worker' },
  'notes/email': { by: 'nothing: mail notes are the record (the owner archives or deletes)' },
  'notes/chats': { by: 'nothing: transcripts are the record' },
  'chat/events': {
    by: `chat retention.events_max_bytes (${retention.events.maxBytes} B; a log in use at twice that) and events_max_age (7d), per conversation`,
    keepMs: retention.events.maxAgeMs,
    // Per conversation at most twice events_max_bytes (a log in use) plus what an hour adds before housekeeping.
    capBytes: 0,
  },
  'chat/inbox': { by: 'chat retention.answered_inbox (7d)', keepMs: retention.answeredInboxMs },
  'events (ledger)': { by: 'events.retention_days (90)', keepMs: 90 * 24 * hourMs },
  logs: { by: 'human_log.retention_days when set (by default every day is kept: the audit trail)' },
};

const conversationIds: string[] = [];
for (let index = 0; index < conversations; index += 1) conversationIds.push((await store.create({})).id);
const mailBody = `${'Hello, this is a message about the project, the invoice and next week. '.repeat(20)}\n`;
const counters = { mails: 0, chat: 0, tasks: 0, carry: { mails: 0, chat: 0, tasks: 0 } };

async function runTask(type: string, payload: Record<string, string | number>): Promise<void> {
  const outcome = await queue.enqueue({ type, payload, source: 'cli' });
  if (outcome.status !== 'enqueued') throw new Error(`enqueue ${type}: ${outcome.status}`);
  const claimed = await consumer.claim();
  if (!claimed) throw new Error('nothing to claim');
  await consumer.complete(claimed, { ok: true });
  await ledger.emit({
    type: 'task.done',
    source: 'queue',
    nativeId: `${claimed.task.id}:1`,
    causedBy: [claimed.task.id],
    data: { task: claimed.task.id, task_type: type, integration: 'bench', attempts: 1 },
  });
}

async function oneMail(): Promise<void> {
  counters.mails += 1;
  const uid = counters.mails;
  await notes.create(`email/personal/${uid}.md`, {
    data: { from: `Sender ${uid % 97} <s${uid % 97}@example.org>`, subject: `Mail ${uid}`, uid },
    body: mailBody,
  });
  await runTask('email.inbox.classify', { note: `email/personal/${uid}.md` });
  await humanLog.write({ source: 'email/inbox', message: `classified "Mail ${uid}"` });
}

async function oneChatMessage(): Promise<void> {
  counters.chat += 1;
  const n = counters.chat;
  const conversation = conversationIds[n % conversations] as string;
  const at = () => new Date(simulatedMs).toISOString();
  const accepted = await inbox.accept(conversation, { text: `Question ${n}: what is new today?`, clientId: `cl-${n}` });
  await events.append(conversation, { type: 'message', message: { id: accepted.id }, at: at() });
  await store.appendMessage(conversation, {
    id: accepted.id,
    role: 'user',
    text: `Question ${n}: what is new today?`,
  });
  await events.append(conversation, { type: 'turn_started', reply_to: [accepted.id], at: at() });
  for (let piece = 0; piece < tokensPerReply; piece += 1) {
    await events.append(conversation, { type: 'token', text: 'word ', at: at() });
  }
  const reply = await store.appendMessage(conversation, {
    role: 'assistant',
    text: `Here is what is new (${n}): ${'three mails and a meeting. '.repeat(6)}`,
    reply_to: [accepted.id],
  });
  await inbox.markAnswered(conversation, { ids: [accepted.id], replyId: reply.id });
  await events.append(conversation, { type: 'turn_done', reply: reply.id, reply_to: [accepted.id], at: at() });
  await runTask('chat.turn', { conversation, message: accepted.id });
}

async function oneTask(): Promise<void> {
  counters.tasks += 1;
  await runTask('system.echo', { n: counters.tasks });
}

async function snapshot(): Promise<Record<string, { files: number; bytes: number }>> {
  const result: Record<string, { files: number; bytes: number }> = {};
  for (const [name, folder] of Object.entries(stores)) {
    if (name === 'queue/pending+active') {
      const pending = await usage(folder);
      const active = await usage(path.join(data, 'queue', 'active'));
      result[name] = { files: pending.files + active.files, bytes: pending.bytes + active.bytes };
    } else result[name] = await usage(folder);
  }
  return result;
}

const rssStart = rssMb();
const start = await snapshot();
const housekeepingMs: number[] = [];
const housekeepingParts = { queue: [] as number[], ledger: [] as number[], chat: [] as number[] };
const median = (values: number[]) => Math.round([...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0);
const hourly: { hour: number; chatEvents: number; chatInbox: number; queueDone: number }[] = [];
const realStart = Date.now();
try {
  for (let hour = 0; hour < hours; hour += 1) {
    const passStart = Date.now() - 1_000;
    // The hour's work, interleaved as it arrives; the simulated clock moves on through the hour.
    const due = {
      mails: perHour.mails + counters.carry.mails,
      chat: perHour.chat + counters.carry.chat,
      tasks: perHour.tasks + counters.carry.tasks,
    };
    const counts = { mails: Math.floor(due.mails), chat: Math.floor(due.chat), tasks: Math.floor(due.tasks) };
    counters.carry = {
      mails: due.mails - counts.mails,
      chat: due.chat - counts.chat,
      tasks: due.tasks - counts.tasks,
    };
    const total = counts.mails + counts.chat + counts.tasks;
    const work: (() => Promise<void>)[] = [];
    for (let index = 0; index < counts.mails; index += 1) work.push(oneMail);
    for (let index = 0; index < counts.chat; index += 1) work.push(oneChatMessage);
    for (let index = 0; index < counts.tasks; index += 1) work.push(oneTask);
    // A fixed interleaving (not random): each kind spread over the hour.
    work.sort((a, b) => (work.indexOf(a) % 7) - (work.indexOf(b) % 7));
    for (let index = 0; index < work.length; index += 1) {
      simulatedMs = startMs + hour * hourMs + Math.floor((index / total) * hourMs);
      await (work[index] as () => Promise<void>)();
    }
    simulatedMs = startMs + (hour + 1) * hourMs;
    // Files this hour wrote get the simulated time: the retentions then see simulated ages.
    for (const folder of [
      path.join(data, 'queue', 'done'),
      path.join(data, 'queue', 'failed'),
      path.join(data, 'chat', 'events'),
    ]) {
      await stampSimulated(folder, passStart);
    }
    // The housekeeping the worker runs every hour (system.housekeeping.run), on the simulated clock.
    const started = performance.now();
    await queue.prune();
    const afterQueue = performance.now();
    await ledger.prune();
    const afterLedger = performance.now();
    await compactChat({ directory: path.join(data, 'chat'), retention, now: new Date(simulatedMs) });
    const finished = performance.now();
    housekeepingMs.push(finished - started);
    housekeepingParts.queue.push(afterQueue - started);
    housekeepingParts.ledger.push(afterLedger - afterQueue);
    housekeepingParts.chat.push(finished - afterLedger);
    const snap = await snapshot();
    hourly.push({
      hour: hour + 1,
      chatEvents: snap['chat/events']?.bytes ?? 0,
      chatInbox: snap['chat/inbox']?.files ?? 0,
      queueDone: snap['queue/done']?.files ?? 0,
    });
    if (!values.json) {
      process.stdout.write(
        `hour ${String(hour + 1).padStart(2)}: ${total} items, chat events ${((hourly.at(-1)?.chatEvents ?? 0) / 1024) | 0} KiB, housekeeping ${housekeepingMs.at(-1)?.toFixed(0)} ms, rss ${rssMb()} MB\n`,
      );
    }
  }
  const realMs = Date.now() - realStart;
  const end = await snapshot();
  const rssEnd = rssMb();

  // A conversation of `longMessages` messages: open, append, list, as the pages and `assistant chat` do.
  let long: Record<string, number> | undefined;
  if (longMessages > 0) {
    const conversation = await store.create({});
    const file = path.join(notes.root, conversation.path);
    const text = await readFile(file, 'utf8');
    const sections: string[] = [];
    const { renderSection } = await import('../packages/chat/src/transcript.ts');
    for (let index = 0; index < longMessages; index += 1) {
      const at = new Date(startMs + index * 60_000).toISOString();
      sections.push(
        index % 2 === 0
          ? renderSection({
              id: `m${index.toString(36)}u`,
              role: 'user',
              text: `Question ${index}: what did Anna want?`,
              at,
            })
          : renderSection({
              id: `m${index.toString(36)}a`,
              role: 'assistant',
              text: `Anna asks for the October invoice (${index}) again, to the new address, and when it will be paid.`,
              at,
              reply_to: [`m${(index - 1).toString(36)}u`],
              status: 'complete',
            }),
      );
    }
    await writeFile(file, `${text.trimEnd()}\n\n${sections.join('\n')}`);
    const rssBefore = rssMb();
    let timer = performance.now();
    const opened = await store.get(conversation.id);
    const getMs = performance.now() - timer;
    timer = performance.now();
    for (let index = 0; index < 10; index += 1)
      await store.appendMessage(conversation.id, { role: 'user', text: `more ${index}` });
    const appendMs = (performance.now() - timer) / 10;
    timer = performance.now();
    await store.list();
    const listMs = performance.now() - timer;
    long = {
      messages: opened.messages.length,
      noteBytes: (await stat(file)).size,
      getMs: Math.round(getMs),
      appendMs: Math.round(appendMs),
      listMs: Math.round(listMs),
      rssBeforeMb: rssBefore,
      rssAfterMb: rssMb(),
    };
  }

  const rows = Object.keys(stores).map((name) => {
    const before = start[name] ?? { files: 0, bytes: 0 };
    const after = end[name] ?? { files: 0, bytes: 0 };
    const perDayBytes = ((after.bytes - before.bytes) * 24) / hours;
    const bound = bounds[name] ?? { by: 'unknown' };
    let steadyBytes = bound.keepMs === undefined ? undefined : Math.round((perDayBytes * bound.keepMs) / (24 * hourMs));
    if (bound.capBytes !== undefined) {
      // The chat logs: each conversation's log is cut once past twice events_max_bytes, at the next hourly pass.
      const grossPerHour = (perHour.chat * (1 + 1 + tokensPerReply + 1) * 90) / conversations;
      const cap = conversations * (2 * retention.events.maxBytes + grossPerHour);
      steadyBytes = Math.round(Math.min(steadyBytes ?? cap, cap));
    }
    return {
      store: name,
      start: before,
      end: after,
      perDayBytes: Math.round(perDayBytes),
      bound: bound.by,
      steadyBytes,
    };
  });
  const unbounded = rows.filter(
    (row) => row.steadyBytes === undefined && row.perDayBytes > 0 && !row.store.startsWith('queue/pending'),
  );
  const report = {
    machine: machineLine(root),
    hours,
    scale,
    ratesPerDay: { mails: heavyDay.mails * scale, chat: heavyDay.chat * scale, tasks: heavyDay.tasks * scale },
    realSeconds: Math.round(realMs / 1000),
    rss: { startMb: rssStart, endMb: rssEnd, heapEndMb: Math.round(process.memoryUsage().heapUsed / 1_048_576) },
    housekeepingMs: {
      median: Math.round([...housekeepingMs].sort((a, b) => a - b)[Math.floor(housekeepingMs.length / 2)] ?? 0),
      max: Math.round(Math.max(...housekeepingMs)),
      lastQueue: Math.round(housekeepingParts.queue.at(-1) ?? 0),
      lastLedger: Math.round(housekeepingParts.ledger.at(-1) ?? 0),
      lastChat: Math.round(housekeepingParts.chat.at(-1) ?? 0),
      medianChat: median(housekeepingParts.chat),
    },
    stores: rows,
    unbounded: unbounded.map((row) => row.store),
    long,
  };
  if (values.json) console.log(JSON.stringify(report, null, 2));
  else {
    const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;
    console.log(`\n${report.machine}`);
    console.log(
      `${hours} simulated hours at ${scale}× a heavy owner (${report.ratesPerDay.mails} mails, ${report.ratesPerDay.chat} chat messages, ${report.ratesPerDay.tasks} tasks a day) in ${report.realSeconds} s`,
    );
    console.log(
      `RSS ${rssStart} MB at the start, ${rssEnd} MB at the end; housekeeping pass median ${report.housekeepingMs.median} ms, max ${report.housekeepingMs.max} ms (the last: queue prune ${report.housekeepingMs.lastQueue} ms, ledger prune ${report.housekeepingMs.lastLedger} ms, chat compaction ${report.housekeepingMs.lastChat} ms); heap ${report.rss.heapEndMb} MB at the end`,
    );
    console.log(
      '\nstore                 files start→end       bytes start→end         per day      at steady state  bounded by',
    );
    for (const row of rows) {
      console.log(
        `${row.store.padEnd(21)} ${`${row.start.files}→${row.end.files}`.padEnd(20)} ${`${kib(row.start.bytes)}→${kib(row.end.bytes)}`.padEnd(23)} ${kib(row.perDayBytes).padEnd(12)} ${(row.steadyBytes === undefined ? '—' : kib(row.steadyBytes)).padEnd(16)} ${row.bound}`,
      );
    }
    if (unbounded.length > 0) console.log(`\nGROWS WITHOUT A RETENTION: ${report.unbounded.join(', ')}`);
    if (long) {
      console.log(
        `\nA conversation of ${long.messages} messages (${kib(long.noteBytes ?? 0)} note): open ${long.getMs} ms, append ${long.appendMs} ms each, list ${long.listMs} ms; RSS ${long.rssBeforeMb}→${long.rssAfterMb} MB`,
      );
    }
  }
} finally {
  await consumer.close();
  await queue.close();
  await rm(root, { recursive: true, force: true });
}
