import { Conversation, fenceUntrusted, type ResolvedAction, RetryableError } from '@assistant/sdk';
import type { EmailContext } from './email-settings.ts';

/**
 * The reply the LLM writes to a message, the mail a stranger wrote fenced as untrusted text: for `draft_reply` at act
 * time (nothing is sent, the owner edits the draft), and for `send_reply` when the message is evaluated, before the
 * owner is asked (see {@link sendReplyText}).
 */
export async function writeReply(
  context: Pick<EmailContext, 'llm' | 'signal'>,
  data: Record<string, unknown>,
): Promise<string> {
  const fenced = fenceUntrusted(
    { from: String(data.from ?? ''), subject: String(data.subject ?? ''), body: String(data.body_excerpt ?? '') },
    { maxCharsByField: { body: 6_000 } },
  );
  const conversation = new Conversation(context.llm(), {
    system: `You draft short, friendly email replies for the owner, in the language of the message. Write only the reply text, no subject line. ${fenced.instruction}`,
  });
  return conversation.ask(`Draft a reply to this message:\n\n${fenced.text}`, { signal: context.signal });
}

/**
 * `enqueueActions`' `writeText` for the inbox: the text `send_reply` will send, written at evaluate time so the
 * approval request shows it and the act task carries it; the act sends exactly it and never asks the model. Other
 * actions send no words of their own (`unsubscribe`'s mail is a fixed text), and `draft_reply` only saves a draft.
 */
export function sendReplyText(
  context: Pick<EmailContext, 'llm' | 'signal'>,
  data: Record<string, unknown>,
): (action: ResolvedAction) => Promise<string | undefined> {
  return async (action) => {
    if (action.name !== 'send_reply') return undefined;
    const text = (await writeReply(context, data)).trim();
    // An empty reply is no reply: the model is asked again later rather than the owner asked to approve sending nothing.
    if (text === '') throw new RetryableError('the model wrote an empty reply: nothing to send or ask about');
    return text;
  };
}
