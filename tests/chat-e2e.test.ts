// Chat end to end: `assistant start` (server and worker as child processes), a conversation over REST, its event
// stream over SSE, and a fake OpenAI-compatible model that reads a note with a tool, asks the owner a question,
// proposes an irreversible action, and approves it when the owner says so in the chat; the action runs once.
import path from 'node:path';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import { describe, expect, it } from 'vitest';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, repoRoot, startNode } from './helpers/node-process.ts';
import { readServerSentEvents, type ServerSentEvent } from './helpers/sse.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const greeter = path.join(repoRoot, 'tests/fixtures/integrations/custom/greeter');

interface WireMessage {
  role: string;
  content: string | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

/** The model's side of the story, decided from the conversation it is sent. */
function respond(request: FakeChatRequest): FakeReply {
  const messages = request.body.messages as WireMessage[];
  const last = messages.at(-1);
  if (last?.role === 'tool') {
    const call = messages
      .flatMap((message) => message.tool_calls ?? [])
      .find((candidate) => candidate.id === last.tool_call_id);
    switch (call?.function.name) {
      case 'read_note':
        return { toolCalls: [{ name: 'ask_owner', arguments: { question: 'A formal card or a friendly one?' } }] };
      case 'ask_owner':
        return {
          toolCalls: [
            {
              name: 'propose',
              arguments: {
                instance: 'friendly',
                platform: 'cards',
                item: 'greeter/friendly/ada.md',
                action: { kind: 'platform', name: 'send_card' },
                reason: 'the owner asked for a friendly birthday card for Ada',
              },
            },
          ],
        };
      case 'propose': {
        const approval = /ap-[0-9a-f]{12}/.exec(last.content ?? '')?.[0] ?? 'none';
        // Word by word, 40 ms apart: the reply reaches the client in pieces as the model writes it.
        return {
          text: `Ada's birthday is on 10 December. I proposed a friendly card: approve ${approval} to send it.`,
          chunkDelayMs: 40,
        };
      }
      case 'decide_approval':
        return { text: 'Approved: the card is on its way.' };
      default:
        return { text: `unexpected tool ${call?.function.name}` };
    }
  }
  const said = last?.content ?? '';
  const approval = /ap-[0-9a-f]{12}/.exec(said)?.[0];
  if (approval) return { toolCalls: [{ name: 'decide_approval', arguments: { id: approval, decision: 'approve' } }] };
  return { toolCalls: [{ name: 'read_note', arguments: { path: 'greeter/friendly/ada.md' } }] };
}

describe('chat through server and worker', () => {
  it('streams a reply that read a note, asks the owner, and performs a proposed action once when approved in the chat', {
    timeout: 90_000,
  }, async () => {
    await using model = await FakeOpenAiServer.start({ respond });
    await using dir = await tempDir();
    const port = await freePort();
    const configPath = await dir.write(
      'config.yaml',
      `data_dir: ./data
integration_dirs: [${JSON.stringify(greeter)}]
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${model.url}", model: fake-model}
server: {port: ${port}}
worker: {shutdown_grace: 2s, poll_interval: 50ms}
integrations:
  - type: greeter
    name: friendly
    platforms:
      cards:
        names: [Ada]
`,
    );
    const notes = new FileNoteStore({ root: path.join(dir.path, 'data/notes') });
    await notes.create('greeter/friendly/ada.md', {
      data: { name: 'Ada', is_friend: true },
      body: 'Ada Lovelace. Birthday: 10 December.\n',
    });
    const assistant = startNode({ args: [cliMain, 'start', '--config', configPath], cwd: dir.path });
    const stopEvents = new AbortController();
    try {
      await assistant.waitForOutput(/listening on/, { timeoutMs: 25_000 });
      await assistant.waitForOutput(/worker ready/, { timeoutMs: 25_000 });
      const api = fetchWithToken(await readApiToken(path.join(dir.path, 'data')));
      const base = `http://127.0.0.1:${port}`;
      const post = async (url: string, body: unknown) => {
        const response = await api(`${base}${url}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      };

      const created = await post('/api/chats', { title: 'Birthdays' });
      expect(created.status).toBe(201);
      const chat = String(created.body.id);
      const events: ServerSentEvent[] = [];
      const stream = await api(`${base}/api/chats/${chat}/events?from=0`, { signal: stopEvents.signal });
      expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const following = readServerSentEvents(stream, (event) => events.push(event));
      const seen = (type: string, where: (data: Record<string, unknown>) => boolean = () => true) =>
        waitUntil(() => events.find((event) => event.type === type && where(event.data)), {
          what: `a ${type} event on the conversation's stream`,
          timeoutMs: 25_000,
        });

      const asked = await post(`/api/chats/${chat}/messages`, {
        text: "When is Ada's birthday? Send her a card.",
        client_id: 'owner-1',
      });
      expect(asked).toEqual({ status: 202, body: { id: expect.any(String), delivery: 'started', duplicate: false } });
      const question = await seen('clarification');
      expect(question.data).toMatchObject({ question: 'A formal card or a friendly one?' });
      const answer = await post(`/api/chats/${chat}/messages`, { text: 'A friendly one.', client_id: 'owner-2' });
      expect(answer).toEqual({
        status: 202,
        body: { id: expect.any(String), delivery: 'answered_question', duplicate: false },
      });
      const shown = await seen('approval');
      const approval = String(shown.data.id);
      expect(approval).toMatch(/^ap-[0-9a-f]{12}$/);
      const firstDone = await seen('turn_done');
      expect(firstDone.data).toMatchObject({
        status: 'complete',
        reply_to: [asked.body.id, answer.body.id],
      });

      // The reply streamed: its tokens, in order, make its text; the tool steps were shown as they ran.
      const firstReply = `Ada's birthday is on 10 December. I proposed a friendly card: approve ${approval} to send it.`;
      const turn = firstDone.data.turn;
      const tokens = events.filter((event) => event.type === 'token' && event.data.turn === turn);
      expect(tokens.length).toBeGreaterThan(3);
      expect(tokens.map((event) => event.data.text).join('')).toBe(firstReply);
      expect(
        events
          .filter((event) => event.type === 'step' && event.data.status === 'finished')
          .map((event) => event.data.tool),
      ).toEqual(['read_note', 'ask_owner', 'propose']);
      const tokenAt = events.indexOf(tokens[0] as ServerSentEvent);
      expect(tokenAt).toBeLessThan(events.indexOf(firstDone));
      // The model read the note through the tool (fenced as data), and got the owner's answer unfenced.
      const toolResults = model.requests.flatMap((request) =>
        (request.body.messages as WireMessage[]).filter((message) => message.role === 'tool'),
      );
      expect(toolResults.some((message) => message.content?.includes('Birthday: 10 December'))).toBe(true);

      // The owner confirms in the chat; the model approves; the act task runs the card once.
      const confirm = await post(`/api/chats/${chat}/messages`, {
        text: `Yes, approve ${approval}.`,
        client_id: 'o-3',
      });
      expect(confirm.body.delivery).toBe('started');
      const secondDone = await seen('turn_done', (data) =>
        (data.reply_to as string[]).includes(String(confirm.body.id)),
      );
      expect(secondDone.data.status).toBe('complete');
      const applied = await waitUntil(
        async () => {
          const note = await notes.read('greeter/friendly/ada.md');
          return Array.isArray(note?.data.applied) ? note.data.applied : undefined;
        },
        { what: 'the act task to send the card', timeoutMs: 25_000 },
      );
      expect(applied).toEqual(['send_card']);

      const conversation = (await (await api(`${base}/api/chats/${chat}`)).json()) as { messages: unknown[] };
      const messages = conversation.messages as { id: string; role: string; reply_to?: string[]; status: string }[];
      expect(messages.map((message) => [message.role, message.status])).toEqual([
        ['user', 'answered'],
        ['user', 'answered'],
        ['assistant', 'complete'],
        ['user', 'answered'],
        ['assistant', 'complete'],
      ]);
      const answered = messages.flatMap((message) => message.reply_to ?? []);
      expect(answered.sort()).toEqual([asked.body.id, answer.body.id, confirm.body.id].sort());
      const approvalNote = await notes.read(`approvals/${approval}.md`);
      expect(approvalNote?.data).toMatchObject({ status: 'approved', decided_by: 'chat' });

      // A resend of the first message is the same message, answered already: nothing is stored or run again.
      const resent = await post(`/api/chats/${chat}/messages`, {
        text: "When is Ada's birthday? Send her a card.",
        client_id: 'owner-1',
      });
      expect(resent.body).toMatchObject({ id: asked.body.id, duplicate: true });
      const requestsBefore = model.requests.length;
      await waitUntil(async () => (await notes.read('greeter/friendly/ada.md'))?.data.applied, {
        what: 'the item note',
      });
      expect(model.requests.length).toBe(requestsBefore);
      expect((await notes.read('greeter/friendly/ada.md'))?.data.applied).toEqual(['send_card']);
      stopEvents.abort();
      await following;
    } finally {
      stopEvents.abort();
      assistant.child.kill('SIGTERM');
      await assistant.exited;
    }
  });
});
