// Memory through a real worker process (issue 35): a mail in a local Maildir is collected and classified by
// `assistant work`, consolidation (a memory.consolidate task the classify stage enqueues) writes a contact, a fact and
// a follow-up, and then a chat turn finds the fact with `recall` and gets it in its context, with its source.
import path from 'node:path';
import { ChatInbox, ConversationStore } from '@assistant/chat';
import { loadRuntime } from '@assistant/integration-host';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { openFileTaskQueue } from '@assistant/queue';
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

const mail = [
  'From: Bob Stone <bob@stone.example>',
  'To: alice@example.test',
  'Subject: Dentist moved, and the contract',
  'Date: Tue, 24 Nov 2026 09:15:00 +0000',
  'Message-ID: <dentist-1@stone.example>',
  'Content-Type: text/plain; charset=utf-8',
  '',
  'Hi Alice,',
  '',
  'the dentist moved your appointment to Friday at 10:00.',
  'Could you send me the signed contract by Monday?',
  '',
  'Bob',
  '',
].join('\r\n');

const statement = 'The dentist appointment moved to Friday at 10:00';

/** The property names of the JSON schema a structured request asks for. */
function schemaKeys(request: FakeChatRequest): string[] {
  const format = request.body.response_format as { json_schema?: { schema?: { properties?: object } } } | undefined;
  return Object.keys(format?.json_schema?.schema?.properties ?? {});
}

const messagesOf = (request: FakeChatRequest) =>
  request.body.messages as { role: string; content: string | null; tool_calls?: unknown[] }[];

describe('memory in a worker', () => {
  it('consolidates a collected mail into a contact, a fact and a task, and a chat turn recalls the fact', {
    timeout: 120_000,
  }, async () => {
    const chatRequests: FakeChatRequest[] = [];
    await using model = await FakeOpenAiServer.start({
      respond: (request): FakeReply => {
        const keys = schemaKeys(request);
        const text = JSON.stringify(messagesOf(request));
        if (keys.includes('people')) {
          // Consolidation: the mail yields Bob, a fact and a follow-up; the owner's chat message yields nothing.
          if (!text.includes('signed contract')) return { json: { people: [], facts: [], followups: [] } };
          return {
            json: {
              people: [{ name: 'Bob Stone', email: 'bob@stone.example' }],
              facts: [{ statement, about: ['Bob Stone', 'dentist'], confidence: 0.9 }],
              followups: [{ title: 'Send Bob the signed contract', due: '2026-11-30', about: 'Bob Stone' }],
            },
          };
        }
        if (keys.length > 0) {
          return { json: { human: 0.95, requires_response: true, newsletter: false, urgent: false } };
        }
        // The chat turn: recall first, then answer from what the tool returned.
        chatRequests.push(request);
        if (chatRequests.length === 1) {
          return { toolCalls: [{ name: 'recall', arguments: { query: 'dentist appointment' } }] };
        }
        return { text: 'Your dentist appointment is on Friday at 10:00.' };
      },
    });
    await using dir = await tempDir();
    await dir.write('Maildir/new/1795000000.0.test', mail);
    const config = await dir.write(
      'config.yaml',
      `data_dir: ./data
llms:
  default: {base_url: "${model.url}", model: fake-model}
integrations:
  - type: email
    name: local
    maildir: ./Maildir
    username: alice@example.test
    window: 3650d
worker: {shutdown_grace: 2s, poll_interval: 50ms}
`,
    );
    const cli = (args: string[]) => runCli(args, { cwd: dir.path });
    expect((await cli(['trigger', 'local', 'inbox'])).code).toBe(0);
    const work = await cli(['work', '--exit-when-idle']);
    expect(work.code, work.stderr).toBe(0);

    const runtime = await loadRuntime({ installation, configPath: config, cwd: dir.path });
    const queue = await openFileTaskQueue({ directory: runtime.config.paths.queue, settings: runtime.config.queue });
    expect(await queue.list({ state: 'failed' })).toEqual([]);
    // Nothing left waiting for a retry either: consolidation ran once and succeeded.
    expect(await queue.list({ state: 'pending' })).toEqual([]);
    const consolidated = await queue.list({ state: 'done', type: 'memory.consolidate' });
    expect(consolidated).toHaveLength(1);

    const notes = new FileNoteStore({ root: runtime.config.paths.notes });
    const contacts = await notes.query({ folder: 'contacts' });
    expect(contacts.map((note) => note.data.name)).toEqual(['Bob Stone']);
    expect(contacts[0]?.data.emails).toEqual(['bob@stone.example']);
    const facts = await notes.query({ folder: 'facts' });
    expect(facts).toHaveLength(1);
    const factPath = facts[0]?.path ?? '';
    expect(`${facts[0]?.body}`).toContain(statement);
    expect(facts[0]?.data).toMatchObject({ trust: 'extracted' });
    expect(String(facts[0]?.data.source)).toMatch(/^email\/local\//);
    const tasks = await notes.query({ folder: 'tasks' });
    expect(tasks.map((note) => note.data.title)).toEqual(['Send Bob the signed contract']);
    expect(tasks[0]?.data).toMatchObject({ created_by: 'extraction', status: 'open' });
    // The human log says what was learned: counts and the contact's name, not the mail's words.
    const log = (await cli(['log'])).stdout;
    expect(log).toMatch(/memory from email\/local\/.*new contact Bob Stone; 1 fact; 1 follow-up/);
    expect(log).not.toContain('signed contract by Monday');

    // A chat turn, as the server starts one: the message accepted, its chat.turn task enqueued.
    const inbox = new ChatInbox({ directory: path.join(runtime.config.paths.dataDir, 'chat/inbox') });
    const conversations = new ConversationStore({ notes, inbox });
    const { id: conversation } = await conversations.create({ title: 'dentist' });
    const { id: message } = await inbox.accept(conversation, { text: 'When is my dentist appointment?' });
    await queue.enqueue({
      type: 'chat.turn',
      payload: { conversation, message },
      priority: 1,
      source: 'api',
      integration: 'chat',
    });
    const chatWork = await cli(['work', '--exit-when-idle']);
    expect(chatWork.code, chatWork.stderr).toBe(0);

    expect(chatRequests).toHaveLength(2);
    const first = messagesOf(chatRequests[0] as FakeChatRequest);
    // The fact is in the turn's context, fenced as extracted (untrusted) data, with its path.
    const system = first.find((entry) => entry.role === 'system')?.content ?? '';
    expect(system).toContain(statement);
    expect(system).toContain(`note ${factPath}`);
    expect(system).toMatch(/<<<UNTRUSTED-[0-9a-f]+ facts_/);
    // The tool's answer, fenced, holds the fact's path.
    const toolResult = messagesOf(chatRequests[1] as FakeChatRequest).find((entry) => entry.role === 'tool');
    expect(toolResult?.content).toContain(factPath);
    expect(toolResult?.content).toMatch(/<<<UNTRUSTED-/);
    const replies = (await conversations.get(conversation)).messages.filter((entry) => entry.role === 'assistant');
    expect(replies.map((entry) => entry.text)).toEqual(['Your dentist appointment is on Friday at 10:00.']);
    // The owner's message was consolidated after the turn.
    expect(await queue.list({ state: 'done', type: 'memory.consolidate' })).toHaveLength(2);
  });

  // The instance that runs memory is whatever config.yaml names it; with none enabled nothing is enqueued.
  async function runRenamed(memoryInstance: string) {
    const model = await FakeOpenAiServer.start({
      respond: (request): FakeReply => {
        if (schemaKeys(request).includes('people')) {
          // The model lists the owner (the mail account's login) too: never a contact.
          return {
            json: {
              people: [
                { name: 'Bob Stone', email: 'bob@stone.example' },
                { name: 'Alice', email: 'Alice@Example.test' },
              ],
              facts: [],
              followups: [],
            },
          };
        }
        return { json: { human: 0.95, requires_response: true, newsletter: false, urgent: false } };
      },
    });
    const dir = await tempDir();
    await dir.write('Maildir/new/1795000000.0.test', mail);
    const config = await dir.write(
      'config.yaml',
      `data_dir: ./data
llms:
  default: {base_url: "${model.url}", model: fake-model}
integrations:
  - type: email
    name: local
    maildir: ./Maildir
    username: alice@example.test
    window: 3650d
${memoryInstance}
worker: {shutdown_grace: 2s, poll_interval: 50ms}
`,
    );
    const cli = (args: string[]) => runCli(args, { cwd: dir.path });
    expect((await cli(['trigger', 'local', 'inbox'])).code).toBe(0);
    const work = await cli(['work', '--exit-when-idle']);
    expect(work.code, work.stderr).toBe(0);
    const runtime = await loadRuntime({ installation, configPath: config, cwd: dir.path });
    const queue = await openFileTaskQueue({ directory: runtime.config.paths.queue, settings: runtime.config.queue });
    const notes = new FileNoteStore({ root: runtime.config.paths.notes });
    return {
      work,
      queue,
      notes,
      async [Symbol.asyncDispose]() {
        await dir[Symbol.asyncDispose]();
        await model[Symbol.asyncDispose]();
      },
    };
  }

  it('sends consolidation to the memory instance config.yaml renamed, and never makes the owner a contact', {
    timeout: 120_000,
  }, async () => {
    await using run = await runRenamed('  - {type: memory, name: recall-keeper}');
    expect(await run.queue.list({ state: 'failed' })).toEqual([]);
    const consolidated = await run.queue.list({ state: 'done', type: 'memory.consolidate' });
    const records = await Promise.all(consolidated.map((entry) => run.queue.get(entry.name?.id ?? '')));
    expect(records.map((record) => record?.task?.integration)).toEqual(['recall-keeper']);
    const contacts = await run.notes.query({ folder: 'contacts' });
    expect(contacts.map((note) => note.data.name)).toEqual(['Bob Stone']);
  });

  it('enqueues no consolidation when the memory instance is disabled, and says so once', {
    timeout: 120_000,
  }, async () => {
    await using run = await runRenamed('  - {type: memory, name: memory, enabled: false}');
    expect(await run.queue.list({ state: 'failed' })).toEqual([]);
    expect(await run.queue.list({ state: 'pending' })).toEqual([]);
    expect(await run.queue.list({ type: 'memory.consolidate' })).toEqual([]);
    const said = `${run.work.stdout}${run.work.stderr}`.match(/no enabled instance of the memory integration/g) ?? [];
    expect(said).toHaveLength(1);
  });
});
