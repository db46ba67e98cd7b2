import { chatModes, personaNamePattern } from '@assistant/chat';
import {
  enqueueConsolidation,
  type HandlerContext,
  type JsonValue,
  memoryPromptContext,
  memoryTools,
  type Tool,
  UnrecoverableError,
  withCodeMode,
} from '@assistant/sdk';
import * as z from 'zod';
import { chatTools } from './chat-tools.ts';
import type { ChatSettings } from './settings.generated.ts';
import { type ChatPersonaSetup, type ChatTurnOutcome, runChatTurns } from './turn-runner.ts';

const payloadSchema = z.strictObject({
  conversation: z.string().regex(/^[a-z0-9-]{1,64}$/),
  message: z.string().regex(/^[a-z0-9-]{1,64}$/),
});

/**
 * `chat.turn` (priority 1, one per accepted message): answers the pending messages of a conversation, a turn at a
 * time, until the task's own message is answered (docs/chat.md, "Turns"). A task that finds a live turn holding
 * the conversation comes back shortly (DelayedError): that turn probably answers its message.
 */
export async function runChatTurn(context: HandlerContext<JsonValue, ChatSettings>): Promise<ChatTurnOutcome> {
  const checked = payloadSchema.safeParse(context.payload);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new UnrecoverableError(
      `chat.turn expects {"conversation": "c…", "message": "m…"}; ${issue?.path.join('.') || 'payload'}: ${issue?.message}`,
    );
  }
  const stores = context.chat;
  if (!stores) throw new UnrecoverableError('chat.turn runs only as the builtin chat integration (no chat stores)');
  const settings = context.instance.settings;
  const mode = chatModes.find((known) => known === settings.mode);
  if (!mode) {
    throw new UnrecoverableError(
      `The chat instance ${context.instance.name} has mode ${JSON.stringify(settings.mode)}; expected one of ${chatModes.join(', ')}`,
    );
  }
  if (!personaNamePattern.test(settings.persona)) {
    throw new UnrecoverableError(
      `The chat instance ${context.instance.name} has persona ${JSON.stringify(settings.persona)}; expected a persona name (letters, digits, _ and -)`,
    );
  }
  // MCP servers are shared by the worker's loops and start on first use. A turn whose server cannot start answers
  // without its tools rather than not at all: the owner learns why from the log and `assistant mcp ls`.
  const mcpTools = await context.mcpTools(settings.mcp_servers).catch((error: unknown) => {
    context.log.warn(`chat turn without MCP tools: ${error instanceof Error ? error.message : String(error)}`, {
      mcpServers: settings.mcp_servers,
    });
    return [];
  });
  // Read once per task, for run_workflow's description; a broken agents/ folder costs the names, not the turn.
  const workflows = await context.console?.workflows().catch((error: unknown) => {
    context.log.warn(
      `chat turn without the list of workflows: ${error instanceof Error ? error.message : String(error)}`,
    );
    return undefined;
  });
  const memory = context.memory;
  const outcome = await runChatTurns({
    conversationId: checked.data.conversation,
    messageId: checked.data.message,
    taskId: context.task.id,
    signal: context.signal,
    stores,
    settings: {
      mode,
      collectWindowMs: settings.collect_window,
      collectMax: settings.collect_max,
      maxSteps: settings.max_steps,
      persona: settings.persona,
    },
    model: context.llm(),
    // `persona` goes with the options: the worker gates the loop's tool calls by that persona's grants.
    startAgent: (options) => context.agent({ ...options, label: 'chat' }),
    tools: (turn) => [
      ...chatTools({
        context: context as unknown as HandlerContext,
        conversationId: turn.conversationId,
        ownerPeer: isOwner(turn, settings),
        ownerTexts: turn.ownerTexts,
        showApproval: turn.showApproval,
        ...(workflows === undefined ? {} : { workflows }),
      }),
      ...(memory === undefined
        ? []
        : memoryTools({
            memory,
            owner: isOwner(turn, settings),
            source: `chats/${turn.conversationId}.md`,
            createdBy: 'chat',
            timeZone: memory.timeZone,
          })),
      ...mcpTools,
    ],
    warn: (message, fields) => context.log.warn(message, fields),
    persona: (name) => personaSetup(context, name),
    ...(memory === undefined
      ? {}
      : { memoryContext: ({ texts, signal }) => memoryPromptContext({ memory, texts, signal }) }),
  });
  await consolidateOwnerMessage(context, checked.data, settings);
  return outcome;
}

/**
 * After the turn: `memory.consolidate {conversation, message}` for the task's message when it is the owner's and
 * config.yaml's `memory.consolidate` names chat, for the instance that runs memory. Each accepted message has its own turn task, so every owner message
 * of a batch is consolidated once; consolidation itself is idempotent per message.
 */
async function consolidateOwnerMessage(
  context: HandlerContext<JsonValue, ChatSettings>,
  payload: { conversation: string; message: string },
  settings: ChatSettings,
): Promise<void> {
  const memory = context.memory;
  if (!memory?.consolidate.includes('chat') || !context.chat) return;
  const conversation = await context.chat.conversations.get(payload.conversation);
  if (!isOwner(conversation, settings)) return;
  await enqueueConsolidation(context, { domain: 'chat', ...payload });
}

/**
 * What the conversation's persona brings to its turns besides its grants (which the worker applies to every tool
 * call): its instructions, its model profile, its MCP servers' tools. The built-in default adds nothing. A persona
 * that cannot be read adds nothing either: the turn still answers (its tool calls are refused, visibly, since no
 * grants could be read), and the log says why.
 */
async function personaSetup(context: HandlerContext<JsonValue, ChatSettings>, name: string): Promise<ChatPersonaSetup> {
  const agents = context.agents;
  if (agents === undefined) return {};
  let persona: Awaited<ReturnType<typeof agents.persona>>;
  try {
    persona = await agents.persona(name);
  } catch (error) {
    context.log.warn(`chat turn without persona ${name}: ${error instanceof Error ? error.message : String(error)}`, {
      persona: name,
    });
    return {};
  }
  if (persona.source === 'built in') return {};
  const tools =
    persona.mcpServers.length === 0
      ? []
      : await context.mcpTools(persona.mcpServers).catch((error: unknown) => {
          context.log.warn(
            `chat turn without persona ${name}'s MCP tools: ${error instanceof Error ? error.message : String(error)}`,
            { mcpServers: persona.mcpServers },
          );
          return [];
        });
  return {
    instructions: persona.instructions,
    ...(persona.profile === undefined ? {} : { model: context.llm(persona.profile) }),
    tools,
    ...((persona.codeMode ?? 'off') === 'off'
      ? {}
      : {
          withCode: (all: Tool[]) =>
            withCodeMode({ codeact: context.codeact, persona, tools: all, warn: context.log.warn }),
        }),
  };
}

/**
 * The owner on an authenticated channel: peer `owner` (REST with the API token, the local CLI), or on Telegram (Matrix,
 * Discord) a user id listed in the instance's `telegram.allowed_users` (`matrix.…`, `discord.…`). Anyone else gets no approval rights.
 */
export function isOwner(turn: { channel: string; peer: string }, settings: ChatSettings): boolean {
  if (turn.peer === 'owner') return true;
  // The chat channels whose allowed users are the owner (docs/channels.md).
  if (turn.channel !== 'telegram' && turn.channel !== 'matrix' && turn.channel !== 'discord') return false;
  const channel = (settings as unknown as Record<string, { allowed_users?: unknown } | undefined>)[turn.channel];
  const allowed = Array.isArray(channel?.allowed_users) ? channel.allowed_users : [];
  return allowed.some((user) => String(user) === turn.peer);
}
