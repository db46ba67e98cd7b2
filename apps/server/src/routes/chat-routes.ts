import { type ChatService, chatDeliveries, chatModes, maxConversationPageLimit } from '@assistant/chat';
import { AssistantError, isAssistantError } from '@assistant/errors';
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';
import { type EventStreamLimiter, openEventStream } from './event-stream.ts';

/** A comment line on an idle event stream this often keeps proxies and clients from closing it. */
const defaultHeartbeatMs = 15_000;

export interface ChatRoutesOptions {
  /** The server's one ChatService. */
  chat: () => ChatService;
  /** Aborted when the server shuts down: open event streams end. */
  signal: AbortSignal;
  /** @default 15 s */
  heartbeatMs?: number;
  /** Counts each client's open event streams (shared with the dashboard's `/live`). */
  streams: EventStreamLimiter;
}

/** Conversations made over the API are the owner's: the API answers only to its token (or on loopback). */
const apiChannel = 'api';
const apiPeer = 'owner';

const conversationParams = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, { error: 'expected a conversation id: [a-z0-9-], 1-64 long' }),
});

const summarySchema = z.object({
  id: z.string(),
  title: z.string(),
  channel: z.string(),
  peer: z.string(),
  mode: z.enum(chatModes),
  created: z.string(),
  updated: z.string(),
  path: z.string(),
  persona: z.string().optional(),
  forked_from: z.object({ conversation: z.string(), message: z.string() }).optional(),
});

const messageSchema = z.object({
  id: z.string(),
  role: z.enum(['user', 'assistant']),
  text: z.string(),
  at: z.string(),
  reply_to: z.array(z.string()).optional(),
  status: z.string(),
  steps: z.array(z.looseObject({})).optional(),
});

const problemSchema = z.object({ path: z.string(), line: z.number(), message: z.string() });

const offsetText = z.string().regex(/^\d{1,15}$/, { error: 'expected a byte offset: a whole number ≥ 0' });

const inputRefused = (what: string) => ({ description: what, schema: errorBodySchema });

/**
 * `/api/chats`: conversations with the assistant (docs/chat.md). Messages are stored durably before the 202, then
 * answered by a turn in the worker; the replies arrive on the conversation's event stream.
 */
export function registerChatRoutes(app: AssistantServer, routes: RouteTable, options: ChatRoutesOptions): void {
  // Ended by the shutdown signal, or by `app.close()` itself (a server closed without it): the stream's connection
  // is never idle, so the close would otherwise wait for the client to go away.
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort());
  const shutdown = AbortSignal.any([options.signal, closing.signal]);
  const heartbeatMs = options.heartbeatMs ?? defaultHeartbeatMs;

  routes.add(app, {
    method: 'POST',
    url: '/api/chats',
    tag: 'chat',
    summary: 'Start a conversation',
    description:
      'A new conversation note `chats/<id>.md` (channel `api`, peer `owner`); `mode` defaults to the chat instance setting.',
    inputErrorCode: 'CHAT_INPUT_INVALID',
    body: z
      .strictObject({
        title: z
          .string()
          .min(1)
          .max(200)
          .regex(/^[^\p{Cc}]*$/u, { error: 'expected one line of text' })
          .optional(),
        mode: z.enum(chatModes).optional(),
      })
      .optional(),
    responses: {
      201: { description: 'the conversation', schema: summarySchema },
      400: inputRefused('CHAT_INPUT_INVALID: a bad title or mode'),
    },
    handler: async ({ body, reply }) => {
      const created = await options.chat().create({
        channel: apiChannel,
        peer: apiPeer,
        ...(body?.title === undefined ? {} : { title: body.title }),
        ...(body?.mode === undefined ? {} : { mode: body.mode }),
      });
      return reply.code(201).send(created);
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/chats',
    tag: 'chat',
    summary: 'List conversations',
    description:
      'Conversations of every channel, newest first (by `updated`), `limit` at a time (default 50, at most 500); `next_cursor` is the `cursor` of the next page, null on the last. Served from an index under `data/chat/index/`, not by reading every conversation. Notes that cannot be read are listed under `broken`.',
    query: z.strictObject({
      limit: z
        .string()
        .regex(/^\d{1,3}$/, { error: `expected a whole number 1–${maxConversationPageLimit}` })
        .optional(),
      cursor: z.string().min(1).max(1_000).optional(),
    }),
    inputErrorCode: 'CHAT_INPUT_INVALID',
    responses: {
      200: {
        description: 'a page of conversations',
        schema: z.object({
          chats: z.array(summarySchema),
          broken: z.array(z.string()),
          next_cursor: z.string().nullable(),
        }),
      },
      400: inputRefused('CHAT_INPUT_INVALID: a limit out of range, or a cursor no page gave'),
    },
    handler: async ({ query }) => {
      const page = await options.chat().page({
        ...(query.limit === undefined ? {} : { limit: Number(query.limit) }),
        ...(query.cursor === undefined ? {} : { cursor: query.cursor }),
      });
      return { chats: page.chats, broken: page.broken, next_cursor: page.nextCursor };
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/chats/:id',
    tag: 'chat',
    summary: 'A conversation with its messages',
    description:
      'The transcript as its note says now, then the messages accepted but not yet in it (status `pending`). `problems` names sections a person broke (skipped, never rewritten).',
    params: conversationParams,
    inputErrorCode: 'CHAT_INPUT_INVALID',
    responses: {
      200: {
        description: 'the conversation',
        schema: summarySchema.extend({ messages: z.array(messageSchema), problems: z.array(problemSchema) }),
      },
      400: inputRefused('CHAT_INPUT_INVALID: not a conversation id'),
      404: inputRefused('CHAT_NOT_FOUND'),
      409: inputRefused('CHAT_NOTE_BROKEN: the note cannot be read; the message names the file and line'),
    },
    handler: async ({ params }) => options.chat().get(params.id),
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/chats/:id/messages',
    tag: 'chat',
    summary: 'Send a message',
    description:
      'Stored durably before the 202, then answered exactly once by a turn in the worker. A resend with the same `client_id` is the same message (`duplicate: true`, nothing new stored): retry with it after a timeout. `delivery` says how the message joins a running turn (docs/chat.md "Queue modes").',
    params: conversationParams,
    inputErrorCode: 'CHAT_INPUT_INVALID',
    body: z.strictObject({
      text: z.string(),
      mode: z.enum(chatModes).optional(),
      client_id: z.string().min(1).max(200).optional(),
    }),
    responses: {
      202: {
        description: 'stored; its turn is on the queue',
        schema: z.object({ id: z.string(), delivery: z.enum(chatDeliveries), duplicate: z.boolean() }),
      },
      400: inputRefused('CHAT_INPUT_INVALID: empty text, an unknown mode, a bad client id or conversation id'),
      404: inputRefused('CHAT_NOT_FOUND'),
      409: inputRefused('CHAT_NOTE_BROKEN'),
      413: inputRefused('CHAT_MESSAGE_TOO_LARGE: nothing was stored'),
      429: inputRefused(
        'CHAT_PENDING_FULL: too many messages wait for an answer, and this one was not stored (or it was stored but its turn could not be enqueued: the message says which; resend with the same client_id)',
      ),
    },
    handler: async ({ params, body, reply }) => {
      try {
        const posted = await options.chat().post(params.id, {
          text: body.text,
          ...(body.mode === undefined ? {} : { mode: body.mode }),
          ...(body.client_id === undefined ? {} : { clientId: body.client_id }),
        });
        return reply.code(202).send(posted);
      } catch (error) {
        // The body carries no hint: the one that says the message was stored after all goes into the message.
        if (isAssistantError(error) && error.code === 'CHAT_PENDING_FULL' && error.hint) {
          throw new AssistantError(error.code, `${error.message}. ${error.hint}`, { cause: error });
        }
        throw error;
      }
    },
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/chats/:id/fork',
    tag: 'chat',
    summary: 'Fork a conversation from one of its messages',
    description:
      "A new conversation (channel `api`, peer `owner`) holding the messages of this one up to and including `message`, with `forked_from: {conversation, message}` in its frontmatter; mode and persona are the original's, and the original is not changed. Post to the new one as to any conversation: its turns see only the copied history. No turn is enqueued by the fork itself.",
    params: conversationParams,
    inputErrorCode: 'CHAT_INPUT_INVALID',
    body: z.strictObject({
      message: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, { error: 'expected a message id: [a-z0-9-], 1-64 long' }),
      title: z
        .string()
        .min(1)
        .max(200)
        .regex(/^[^\p{Cc}]*$/u, { error: 'expected one line of text' })
        .optional(),
    }),
    responses: {
      201: { description: 'the new conversation', schema: summarySchema },
      400: inputRefused(
        'CHAT_INPUT_INVALID: not a conversation or message id, a bad title, or the notifications conversation (never forked)',
      ),
      404: inputRefused(
        'CHAT_NOT_FOUND: no such conversation; CHAT_MESSAGE_NOT_FOUND: its transcript holds no such message (or it still waits in the inbox)',
      ),
      409: inputRefused('CHAT_NOTE_BROKEN: the original note cannot be read'),
    },
    handler: async ({ params, body, reply }) => {
      const fork = await options.chat().fork({
        conversation: params.id,
        message: body.message,
        channel: apiChannel,
        peer: apiPeer,
        ...(body.title === undefined ? {} : { title: body.title }),
      });
      return reply.code(201).send(fork);
    },
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/chats/:id/stop',
    tag: 'chat',
    summary: "Stop the conversation's running turn",
    description:
      'Asks the running turn to stop (its partial reply is kept in the transcript); messages still waiting get their own turns. `task` is null when no turn was running.',
    params: conversationParams,
    inputErrorCode: 'CHAT_INPUT_INVALID',
    responses: {
      200: { description: 'the stop was requested', schema: z.object({ task: z.string().nullable() }) },
      400: inputRefused('CHAT_INPUT_INVALID: not a conversation id'),
      404: inputRefused('CHAT_NOT_FOUND'),
    },
    handler: async ({ params }) => {
      const chat = options.chat();
      await chat.get(params.id);
      const stopped = await chat.stop(params.id, 'stopped over the API');
      return { task: stopped.task ?? null };
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/chats/:id/events',
    tag: 'chat',
    summary: "A conversation's events as server-sent events",
    description:
      'Each event has `event` (message, turn_started, token, step, clarification, approval, error, turn_done), `id` (a byte offset into the log: a resume point) and JSON `data`. Starts at the end (only what happens next) unless `from` (0 replays the whole log) or `Last-Event-ID` (which wins) says otherwise. A comment every 15 s keeps it open; it ends when the client goes away or the server stops.',
    params: conversationParams,
    query: z.strictObject({ from: offsetText.optional() }),
    inputErrorCode: 'CHAT_INPUT_INVALID',
    responses: {
      200: {
        description: 'text/event-stream: `event: <type>`, `id: <offset>`, `data: <json>`',
        contentType: 'text/event-stream',
      },
      400: inputRefused('CHAT_INPUT_INVALID: not a conversation id, or `from` / Last-Event-ID not an offset'),
      404: inputRefused('CHAT_NOT_FOUND'),
      429: inputRefused(
        'EVENT_STREAMS_FULL: this client already holds `server.event_streams_per_client` streams (32 by default); `retry-after` says when to try again',
      ),
    },
    handler: async ({ params, query, request, reply }) => {
      const release = options.streams.acquire(request, reply);
      try {
        await followConversation({ params, query, request, reply });
      } finally {
        release();
      }
    },
  });

  async function followConversation({
    params,
    query,
    request,
    reply,
  }: {
    params: { id: string };
    query: { from?: string | undefined };
    request: FastifyRequest;
    reply: FastifyReply;
  }): Promise<void> {
    const chat = options.chat();
    await chat.get(params.id);
    const lastEventId = request.headers['last-event-id'];
    const resumeFrom = typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : query.from;
    if (resumeFrom !== undefined && !/^\d{1,15}$/.test(resumeFrom)) {
      throw new AssistantError('CHAT_INPUT_INVALID', `Last-Event-ID: expected a byte offset, got ${resumeFrom}`);
    }
    const fromOffset = resumeFrom === undefined ? await chat.end(params.id) : Number(resumeFrom);
    const stream = new AbortController();
    const signal = AbortSignal.any([stream.signal, shutdown]);
    const raw = openEventStream(reply);
    raw.on('close', () => stream.abort());
    // A client gone while the stream was being set up: its `close` fired before the listener above.
    if (raw.destroyed) stream.abort();
    const write = async (text: string) => {
      if (signal.aborted || raw.destroyed) return;
      // A slow client: wait for its buffer to drain rather than hold the whole log in memory.
      if (!raw.write(text)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            raw.off('drain', done);
            signal.removeEventListener('abort', done);
            resolve();
          };
          raw.on('drain', done);
          signal.addEventListener('abort', done, { once: true });
        });
      }
    };
    await write(`: events of conversation ${params.id} from ${fromOffset}\n\n`);
    const heartbeat = setInterval(() => {
      if (!signal.aborted) raw.write(': heartbeat\n\n');
    }, heartbeatMs);
    try {
      for await (const entry of chat.follow(params.id, { fromOffset, signal })) {
        await write(`event: ${entry.event.type}\nid: ${entry.offset}\ndata: ${JSON.stringify(entry.event)}\n\n`);
      }
    } catch (error) {
      request.log.warn({ err: error }, `the event stream of conversation ${params.id} broke off`);
    } finally {
      clearInterval(heartbeat);
      raw.end();
    }
  }
}
