import { Conversation, type ResolvedAction, RetryableError, renderTemplate, UnrecoverableError } from '@assistant/sdk';
import { callGithubPatiently, ownerLogin } from './client.ts';
import type { GithubContext } from './github-settings.ts';
import { itemPrompt } from './item-prompt.ts';

/**
 * The comment a `comment` action posts: its template (`{comment: "…"}`) rendered over the note's facts, or one the
 * LLM writes over the item, everything people wrote in it fenced as untrusted text.
 */
async function writeComment(
  context: Pick<GithubContext, 'instance' | 'llm' | 'signal' | 'task'>,
  data: Record<string, unknown>,
  template: string | undefined,
): Promise<string> {
  if (template !== undefined) {
    let text: string;
    try {
      text = renderTemplate(template, data);
    } catch (error) {
      throw new UnrecoverableError(`the comment template does not render: ${(error as Error).message}`);
    }
    if (text.trim() === '') throw new UnrecoverableError('the comment template renders as nothing: nothing to post');
    return text;
  }
  const login = await callGithubPatiently(context, 'reading your login', () =>
    ownerLogin(context.instance, context.signal),
  );
  const { facts, fenced } = itemPrompt(data, login);
  const conversation = new Conversation(context.llm(), {
    system: `You write short, friendly, useful GitHub comments on behalf of @${login}, in the language of the thread. Write only the comment's markdown: no greeting line addressed to the owner, no signature, no @mentions of people who are not already in the thread. ${fenced.instruction}`,
  });
  const text = await conversation.ask(`Write @${login}'s comment on this item.\n\n${facts}\n\n${fenced.text}`, {
    signal: context.signal,
  });
  // The model may write something next time: asked again later rather than the owner asked to approve nothing.
  if (text.trim() === '') throw new RetryableError('the model wrote an empty comment: nothing to post or ask about');
  return text.trim();
}

/**
 * `enqueueActions`' `writeText` for pull requests and issues: the comment a `comment` action will post, written at
 * evaluate time so the approval request shows it and the act task carries it; the act posts exactly it and never
 * asks the model. No other action posts words.
 */
export function commentText(
  context: Pick<GithubContext, 'instance' | 'llm' | 'signal' | 'task'>,
  data: Record<string, unknown>,
): (action: ResolvedAction) => Promise<string | undefined> {
  return async (action) => {
    if (action.name !== 'comment') return undefined;
    const template = typeof action.argument === 'string' && action.argument.trim() !== '' ? action.argument : undefined;
    return writeComment(context, data, template);
  };
}
