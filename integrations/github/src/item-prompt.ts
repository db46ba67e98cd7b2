import { type FencedText, fenceUntrusted } from '@assistant/sdk';
import type { CommentExcerpt } from './facts.ts';

/**
 * An item's note as the model sees it: facts GitHub itself states (the repository, sizes, whether the owner's review
 * is requested) as plain lines, and everything people wrote (title, labels, description, comments: strangers can
 * write them) fenced as untrusted text.
 */
export function itemPrompt(data: Record<string, unknown>, owner: string): { facts: string; fenced: FencedText } {
  const isPull = data.kind === 'pull';
  const facts = [
    `${isPull ? 'Pull request' : 'Issue'} ${String(data.repo)}#${String(data.number)}, ${String(data.state)}`,
    `The owner is @${owner}.`,
    `Opened by @${String(data.author)} (${String(data.author_association)}) on ${String(data.created_at)}; ${String(data.comments)} comments.`,
    `Assigned to the owner: ${data.assigned_to_me ? 'yes' : 'no'}; opened by the owner: ${data.authored_by_me ? 'yes' : 'no'}.`,
  ];
  if (isPull) {
    facts.push(
      `The owner's review is requested: ${data.review_requested ? 'yes' : 'no'}; draft: ${data.draft ? 'yes' : 'no'}.`,
      `${String(data.head_ref)} into ${String(data.base_ref)}: ${String(data.changed_files)} files changed, +${String(data.additions)} −${String(data.deletions)} lines.`,
    );
  }
  const comments = (Array.isArray(data.latest_comments) ? data.latest_comments : []) as CommentExcerpt[];
  const fenced = fenceUntrusted(
    {
      title: String(data.title ?? ''),
      labels: Array.isArray(data.labels) ? data.labels.join(', ') : '',
      description: String(data.body_excerpt ?? ''),
      latest_comments: comments.map((comment) => `@${comment.author} (${comment.at}):\n${comment.text}`).join('\n\n'),
    },
    { maxCharsByField: { title: 500, labels: 500, description: 5_000, latest_comments: 6_000 } },
  );
  return { facts: facts.join('\n'), fenced };
}
