import { blackboardPath, runNotePath } from '@assistant/agents';
import type { HandlerContext } from '@assistant/sdk';

/** The longest text `chat.notify` posts (its payload's `text`). */
export const maxReplyChars = 20_000;

/** The builtin chat's default instance: where a reply goes when `reply_to` names none. */
const defaultChatInstance = 'chat';

export interface WorkflowReply {
  workflow: string;
  /** Unknown when the run never started (its manifest gone since it was enqueued). */
  topology?: string;
  run: string;
  /** `stopped`: a person stopped the run (its runner's task steered `stop`). */
  status: 'done' | 'failed' | 'stopped';
  output: string;
  reason?: string;
}

/**
 * The message id of a run's answer: the same for every attempt of the runner, so a runner that crashed after asking for
 * the message and ran again posts one message, not two (`chat.notify` posts an id once; the queue's dedup usually drops
 * the second task before that).
 */
export function replyMessageId(run: string): string {
  return `wf-${run}`;
}

/**
 * The text a conversation gets when a run ends: the workflow, the run, how it ended, and the output (or why it failed),
 * cut to what `chat.notify` takes with a pointer to the run note, which always holds the whole output.
 */
export function replyText(reply: WorkflowReply): string {
  const what = `Workflow \`${reply.workflow}\`${reply.topology === undefined ? '' : ` (${reply.topology})`}, run ${reply.run}`;
  const note = runNotePath(reply.run);
  if (reply.status !== 'done') {
    const text = `${what}: ${reply.status}: ${reply.reason ?? 'no reason given'}\n\nThe run note is ${note}; every step is on the blackboard ${blackboardPath(reply.run)}.`;
    return text.length <= maxReplyChars ? text : `${text.slice(0, maxReplyChars - 60)}\n[… cut: the run note ${note}]`;
  }
  const head = `${what}: done.\n\n`;
  const tail = `\n\n(The run note is ${note}.)`;
  const room = maxReplyChars - head.length - tail.length;
  if (reply.output.length <= room) return `${head}${reply.output || '(no output)'}${tail}`;
  const cutTail = (cutChars: number) =>
    `\n\n[… ${cutChars} more characters: the whole output is in the run note ${note}]`;
  // The cut note's length depends on the number in it; a number of the output's own length is at least as long.
  const kept = room + tail.length - cutTail(reply.output.length).length;
  return `${head}${reply.output.slice(0, kept)}${cutTail(reply.output.length - kept)}`;
}

/**
 * Posts a run's answer into the conversation that started it, as a `chat.notify` task of its chat instance. A worker
 * without the chat integration logs it and the run's own outcome stands; any other failure to ask for it throws, so
 * the attempt is retried and the answer is not lost.
 */
export async function replyToConversation(options: {
  context: HandlerContext;
  /** A `WorkflowReplyTo` as the payload's schema parsed it (`instance` may be there as undefined). */
  replyTo: { conversation: string; instance?: string | undefined };
  reply: WorkflowReply;
}): Promise<void> {
  const { context, replyTo, reply } = options;
  const instance = replyTo.instance ?? defaultChatInstance;
  try {
    const outcome = await context.enqueue({
      type: 'chat.notify',
      integration: instance,
      payload: {
        conversation: replyTo.conversation,
        text: replyText(reply),
        message: replyMessageId(reply.run),
        run: reply.run,
      },
    });
    if (outcome.status === 'rate_limited') {
      context.log.warn(`the answer of run ${reply.run} was not posted to conversation ${replyTo.conversation}`, {
        reason: outcome.reason,
      });
    }
  } catch (error) {
    // Only a worker without the chat integration is a reason to give up; anything else (a full disk, a queue out of
    // reach) fails this attempt, and the queue runs the runner again: keyed, it finds the run finished and asks again.
    if (!(error instanceof Error && /no integration handles task type chat\.notify/.test(error.message))) throw error;
    context.log.warn(
      `the answer of run ${reply.run} is not posted to conversation ${replyTo.conversation} (chat instance ${instance}): ${error instanceof Error ? error.message : String(error)}`,
      { run: reply.run, conversation: replyTo.conversation },
    );
  }
}
