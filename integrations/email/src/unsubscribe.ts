import { type ActPayload, UnrecoverableError } from '@assistant/sdk';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type { EmailContext } from './email-settings.ts';
import { oneClickUnsubscribe } from './safe-unsubscribe.ts';
import { sendRawMail, smtpIdentity } from './smtp-transport.ts';
import { chooseUnsubscribe } from './unsubscribe-target.ts';

/** The whole text of a mailto: unsubscribe: nothing of it comes from the sender. */
export const unsubscribeMail = { subject: 'unsubscribe', text: 'unsubscribe\n' } as const;

/** How a message's unsubscribe will be done, checked before anything is done. */
export type UnsubscribePlan =
  | { method: 'one-click'; url: string; target: string }
  | { method: 'mailto'; address: string };

/**
 * The checks of `unsubscribe` that come before anything is done: a List-Unsubscribe it can follow, the target the note
 * showed when the action was approved (a note edited since does not redirect it), and `smtp:` for a mailto:. A refusal
 * is recorded on the note as `unsubscribe_refused` and in the human log, and fails the task without retries; it is
 * checked before `actOnce` records the action as started, so a refusal is never taken for "may have happened".
 */
export async function planUnsubscribe(
  context: EmailContext<ActPayload>,
  data: Record<string, unknown>,
): Promise<UnsubscribePlan> {
  const targets = Array.isArray(data.list_unsubscribe) ? data.list_unsubscribe.map(String) : [];
  const choice = chooseUnsubscribe({ targets, oneClick: data.list_unsubscribe_one_click === true });
  if (choice.method === 'none') return refuse(context, choice.reason);
  const shown = data.unsubscribe_target;
  if (typeof shown === 'string' && shown !== choice.target) {
    return refuse(
      context,
      `refused: the note shows ${shown} as the unsubscribe target, but it would go to ${choice.target}`,
    );
  }
  if (choice.method === 'one-click') return { method: 'one-click', url: choice.url, target: choice.target };
  smtpIdentity(context.instance.settings);
  return { method: 'mailto', address: choice.address };
}

/**
 * `unsubscribe`, as planned: RFC 8058 one-click (a POST to the https: target, through `oneClickUnsubscribe`'s checks)
 * where the sender offers it, otherwise a fixed "unsubscribe" mail to the one mailto: address. Returns how it was
 * done. A target `oneClickUnsubscribe` refuses (an unsafe address, too many redirects) is recorded like the refusals
 * of `planUnsubscribe`.
 */
export async function unsubscribe(context: EmailContext<ActPayload>, plan: UnsubscribePlan): Promise<string> {
  if (plan.method === 'one-click') {
    try {
      await oneClickUnsubscribe({
        url: plan.url,
        signal: context.signal,
        timeoutMs: context.instance.settings.connect_timeout,
      });
    } catch (error) {
      if (error instanceof UnrecoverableError) return refuse(context, error.message);
      throw error;
    }
    return `one-click POST to ${plan.target}`;
  }
  const { from } = smtpIdentity(context.instance.settings);
  const raw = await new MailComposer({ from, to: plan.address, ...unsubscribeMail }).compile().build();
  await sendRawMail(context.instance.settings, { to: plan.address, raw, what: 'sending the unsubscribe mail' });
  return `mail to ${plan.address}`;
}

async function refuse(context: EmailContext<ActPayload>, reason: string): Promise<never> {
  await context.notes.update(context.payload.item, { set: { unsubscribe_refused: reason } });
  await context.log.human(`did not unsubscribe: ${reason}`, { link: context.payload.item });
  throw new UnrecoverableError(reason);
}
