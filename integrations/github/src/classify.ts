import { classifyItemNote } from '@assistant/sdk';
import { ownerLogin } from './client.ts';
import type { GithubContext } from './github-settings.ts';
import { itemPrompt } from './item-prompt.ts';

/**
 * `github.{pull_requests,issues}.classify` (`{note}`): one structured LLM call answers every classification of the
 * platform (the built-in ones and the instance's) over the item, its text fenced as untrusted. An item classified
 * before is not asked again unless its text (or a pull request's size) changed. Then evaluate.
 */
export async function classify(context: GithubContext<{ note: string }>) {
  return classifyItemNote(context, async (data) => {
    const login = await ownerLogin(context.instance, context.signal);
    const { facts, fenced } = itemPrompt(data, login);
    return { role: `You triage GitHub pull requests and issues for their owner, @${login}.`, fenced, facts };
  });
}
