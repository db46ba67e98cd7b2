import { isPlainAddress } from '@assistant/mail';

/** What `unsubscribe` would do for a message: the same choice at collect time (for the note) and at act time. */
export type UnsubscribeTarget =
  | { method: 'one-click'; url: string; target: string }
  | { method: 'mailto'; address: string; target: string }
  | { method: 'none'; reason: string };

/**
 * RFC 8058 one-click (a POST to the https: target) where the sender offers it; otherwise a mail to the mailto:
 * target. A plain https: link without one-click is a web page for a person, not something to call; an http:
 * target is never called (RFC 8058 requires https:). `target` is what the owner sees: the host of the URL, or the
 * address.
 */
export function chooseUnsubscribe(options: { targets: readonly string[]; oneClick: boolean }): UnsubscribeTarget {
  const web = options.targets.find((target) => /^https:/i.test(target));
  if (web && options.oneClick) {
    try {
      return { method: 'one-click', url: web, target: new URL(web).host };
    } catch {
      // Not a URL: fall through to mailto:.
    }
  }
  const mailto = options.targets.find((target) => /^mailto:/i.test(target));
  if (mailto) {
    const parsed = parseMailto(mailto);
    return 'reason' in parsed
      ? { method: 'none', reason: parsed.reason }
      : { method: 'mailto', address: parsed.address, target: parsed.address };
  }
  if (options.oneClick && options.targets.some((target) => /^http:/i.test(target)))
    return {
      method: 'none',
      reason: 'refused: the one-click target is http:, and one-click unsubscribe is https: only',
    };
  return { method: 'none', reason: 'this message offers no one-click or mailto: unsubscribe; open its link yourself' };
}

/** Header fields a mailto: URL may not set: the mail goes to its one address and nobody else. */
const recipientFields = new Set(['to', 'cc', 'bcc', 'resent-to', 'resent-cc', 'resent-bcc']);

/**
 * The one address of a mailto: URL (RFC 6068). Subject, body and other fields it names are ignored (the mail's text
 * is fixed); more than one address, recipient fields or an address that is not plain are refused.
 */
export function parseMailto(target: string): { address: string } | { reason: string } {
  const refuse = (why: string) => ({ reason: `refused: the mailto: unsubscribe target ${why}` });
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return refuse('is not a URL');
  }
  let address: string;
  try {
    address = decodeURIComponent(url.pathname);
  } catch {
    return refuse('has a broken %-escape');
  }
  for (const key of url.searchParams.keys()) {
    if (recipientFields.has(key.toLowerCase())) return refuse(`adds recipients (${key.toLowerCase()}=)`);
  }
  if (address.includes(',')) return refuse(`names more than one address (${JSON.stringify(address.slice(0, 200))})`);
  if (!isPlainAddress(address))
    return refuse(`address ${JSON.stringify(address.slice(0, 200))} is not a single plain address`);
  return { address };
}
