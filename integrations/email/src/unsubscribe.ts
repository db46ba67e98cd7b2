import { type ActPayload, RetryableError, UnrecoverableError } from '@assistant/sdk';
import type { EmailContext } from './email-settings.ts';
import { smtpTransport } from './smtp-transport.ts';

/**
 * RFC 8058 one-click (a POST to the https: target) where the sender offers it; otherwise a mail to the mailto:
 * target. A plain https: link without one-click is a web page for a person, not something to call: refused.
 */
export async function unsubscribe(context: EmailContext<ActPayload>, data: Record<string, unknown>): Promise<string> {
  const targets = Array.isArray(data.list_unsubscribe) ? (data.list_unsubscribe as string[]) : [];
  const web = targets.find((target) => isOneClickTarget(target));
  if (web && data.list_unsubscribe_one_click === true) {
    const response = await fetch(web, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
      redirect: 'follow',
      signal: AbortSignal.any([context.signal, AbortSignal.timeout(context.instance.settings.connect_timeout)]),
    });
    if (!response.ok)
      throw new RetryableError(`the unsubscribe POST to ${new URL(web).host} answered HTTP ${response.status}`);
    return `one-click POST to ${new URL(web).host}`;
  }
  const mailto = targets.find((target) => target.toLowerCase().startsWith('mailto:'));
  if (mailto) {
    const url = new URL(mailto);
    const { from, transporter } = smtpTransport(context.instance.settings);
    try {
      await transporter.sendMail({
        from,
        to: decodeURIComponent(url.pathname),
        subject: url.searchParams.get('subject') ?? 'unsubscribe',
        text: url.searchParams.get('body') ?? 'unsubscribe',
      });
    } finally {
      transporter.close();
    }
    return `mail to ${decodeURIComponent(url.pathname)}`;
  }
  throw new UnrecoverableError('this message offers no one-click or mailto: unsubscribe; open its link yourself');
}

/** https: targets; plain http: only on loopback (tests and local relays), never across the network. */
function isOneClickTarget(target: string): boolean {
  try {
    const url = new URL(target);
    return (
      url.protocol === 'https:' ||
      (url.protocol === 'http:' && (url.hostname === '127.0.0.1' || url.hostname === 'localhost'))
    );
  } catch {
    return false;
  }
}
