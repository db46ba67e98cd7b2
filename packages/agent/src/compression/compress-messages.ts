import type { ChatMessage, ChatModel, TokenUsage } from '@assistant/llm';
import { renderTranscript } from '../internal/render-transcript.ts';

/** The prefix of the user message that replaces compressed turns. */
export const summaryPrefix = '[summary of earlier turns]';

const summarySystemPrompt =
  'You compress the transcript of an agent at work. Keep what the agent needs to continue: the task, what it did, ' +
  'the facts, figures, names and ids that tool results gave, decisions made, and what is still open. Plain text.';

/** How a transcript splits for compression: what stays at the start, what is summarised, what stays verbatim. */
export interface CompressionPlan {
  /** The leading system message, kept as it is. */
  head: ChatMessage[];
  /** The messages a summary replaces. */
  older: ChatMessage[];
  /** The most recent messages, kept as they are. */
  recent: ChatMessage[];
}

/**
 * Splits `messages` into head, older and recent, or returns `undefined` when there is nothing older to summarise
 * (or only an earlier summary).
 * The boundary moves back past tool results so an assistant tool-call message is never separated from its results:
 * chat APIs reject a tool message whose call is missing.
 */
export function planCompression(messages: readonly ChatMessage[], keepRecent: number): CompressionPlan | undefined {
  const headLength = messages[0]?.role === 'system' ? 1 : 0;
  let boundary = Math.max(headLength, messages.length - keepRecent);
  while (boundary > headLength && messages[boundary]?.role === 'tool') boundary -= 1;
  if (boundary <= headLength) return undefined;
  const older = messages.slice(headLength, boundary);
  // Summarising a lone summary again gains nothing and would cost a model call on every step.
  if (older.length === 1 && older[0]?.role === 'user' && older[0].content.startsWith(summaryPrefix)) return undefined;
  return {
    head: messages.slice(0, headLength),
    older,
    recent: messages.slice(boundary),
  };
}

/** Options of {@link compressMessages}. */
export interface CompressMessagesOptions {
  messages: readonly ChatMessage[];
  /** The model that writes the summary. */
  model: ChatModel;
  /** Messages at the end kept verbatim. */
  keepRecent: number;
  signal?: AbortSignal;
}

/** The compressed transcript, the messages it replaced, and what the summary call cost. */
export interface CompressMessagesResult {
  messages: ChatMessage[];
  archived: ChatMessage[];
  usage: TokenUsage | undefined;
}

/**
 * Replaces the older part of a transcript by one user message holding a summary the model writes. Returns
 * `undefined` when there is nothing older to summarise.
 */
export async function compressMessages(options: CompressMessagesOptions): Promise<CompressMessagesResult | undefined> {
  const plan = planCompression(options.messages, options.keepRecent);
  if (plan === undefined) return undefined;
  const response = await options.model.chat(
    {
      messages: [
        { role: 'system', content: summarySystemPrompt },
        {
          role: 'user',
          content: `Summarise the conversation so far, so that the agent can continue from your summary alone.\n\n${renderTranscript(plan.older)}`,
        },
      ],
    },
    options.signal === undefined ? {} : { signal: options.signal },
  );
  const summary: ChatMessage = { role: 'user', content: `${summaryPrefix} ${response.message.content ?? ''}`.trim() };
  return { messages: [...plan.head, summary, ...plan.recent], archived: plan.older, usage: response.usage };
}
