import { Conversation, classificationAnswerSchema, classificationQuestions, UnrecoverableError } from '@assistant/sdk';
import { ownerLogin } from './client.ts';
import type { GithubContext } from './github-settings.ts';
import { itemPrompt } from './item-prompt.ts';

/**
 * `github.{pull_requests,issues}.classify` (`{note}`): one structured LLM call answers every classification of the
 * platform (the built-in ones and the instance's) over the item, its text fenced as untrusted. An item classified
 * before is not asked again unless its text (or a pull request's size) changed. Then evaluate.
 */
export async function classify(context: GithubContext<{ note: string }>) {
  const notePath = context.payload?.note;
  if (typeof notePath !== 'string') throw new UnrecoverableError('a github classify payload is {note}');
  const note = await context.notes.read(notePath);
  if (!note) throw new UnrecoverableError(`no note ${notePath}`);
  const classifications = context.platform?.classifications ?? {};
  if (note.data.classified_hash === note.data.content_hash && note.data.classifications) {
    await context.enqueue({ stage: 'evaluate', payload: { note: notePath } });
    return { note: notePath, skipped: 'already classified' };
  }
  const login = await ownerLogin(context.instance, context.signal);
  const { facts, fenced } = itemPrompt(note.data, login);
  const model = context.llm();
  const conversation = new Conversation(model, {
    system: `You triage GitHub pull requests and issues for their owner, @${login}. ${fenced.instruction}`,
  });
  const answers = await conversation.structured(
    classificationAnswerSchema(classifications),
    `Answer these questions about the item below.\n${classificationQuestions(classifications)}\n\n${facts}\n\n${fenced.text}`,
    { name: 'classifications', signal: context.signal },
  );
  await context.notes.update(notePath, {
    set: {
      classifications: answers as never,
      classified_by: model.name,
      classified_model: model.model ?? null,
      classified_hash: String(note.data.content_hash ?? ''),
      classified_at: new Date().toISOString(),
    },
  });
  await context.enqueue({ stage: 'evaluate', payload: { note: notePath } });
  return { note: notePath, classifications: answers };
}
