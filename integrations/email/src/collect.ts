import { createHash } from 'node:crypto';
import { enqueueClassifyAfterCollect, UnrecoverableError } from '@assistant/sdk';
import { simpleParser } from 'mailparser';
import type { EmailContext } from './email-settings.ts';
import { messageNotePath } from './email-settings.ts';
import { withImap } from './imap-session.ts';
import { mailFacts } from './mail-facts.ts';
import { findMessage, folderPath, readMessage, resolveMaildir } from './maildir.ts';

async function fromMaildir(context: EmailContext<unknown>, id: string) {
  const settings = context.instance.settings;
  const root = resolveMaildir(settings.maildir ?? '', context.configDir);
  const message = await findMessage(await folderPath(root, settings.mailbox), id);
  if (!message) return undefined;
  const source = await readMessage(message);
  return { source, flags: message.flags, size: source.length };
}

/**
 * `email.inbox.collect` (`{uid, uid_validity}`): fetches and parses one message and writes its note: the headers
 * people look for, the deterministic fields automations test, and a text excerpt. Then it enqueues `classify`, at a
 * lower priority (9) when the sender failed authentication.
 */
export async function collect(context: EmailContext<{ uid: number | string; uid_validity: string }>) {
  const { uid, uid_validity: uidValidity } = context.payload;
  const settings = context.instance.settings;
  const fetched = settings.maildir
    ? await fromMaildir(context, String(uid))
    : await withImap(settings, context.signal, async (client) => {
        const lock = await client.getMailboxLock(settings.mailbox);
        try {
          if (String(client.mailbox ? client.mailbox.uidValidity : '') !== uidValidity) return undefined;
          const message = await client.fetchOne(
            String(uid),
            { uid: true, flags: true, source: true, size: true },
            { uid: true },
          );
          return message
            ? { source: message.source, flags: [...(message.flags ?? [])].sort(), size: message.size }
            : undefined;
        } finally {
          lock.release();
        }
      });
  if (!fetched?.source)
    throw new UnrecoverableError(`message ${uid} is no longer in ${settings.mailbox} (UIDVALIDITY ${uidValidity})`);
  const parsed = await simpleParser(fetched.source);
  const facts = mailFacts(parsed, { authservIds: settings.authserv_ids ?? [] });
  const notePath = messageNotePath(context.instance.name, uidValidity, uid);
  const contentHash = createHash('sha256').update(fetched.source).digest('hex').slice(0, 16);
  const data = {
    ...facts,
    uid,
    uid_validity: uidValidity,
    mailbox: settings.mailbox,
    flags: fetched.flags,
    size: fetched.size ?? fetched.source.length,
    content_hash: contentHash,
    synced: 'present',
    collected_at: new Date().toISOString(),
  };
  const { body_excerpt: excerpt, ...frontmatter } = data;
  const body = `# ${facts.subject || '(no subject)'}\n\nFrom ${facts.from}${facts.date ? `, ${facts.date}` : ''}\n\n${excerpt}\n`;
  const existing = await context.notes.read(notePath).catch(() => undefined);
  if (existing) await context.notes.update(notePath, { set: { ...frontmatter, body_excerpt: excerpt }, body });
  else await context.notes.create(notePath, { data: { ...frontmatter, body_excerpt: excerpt }, body });
  // In the ledger before the task is done: a collect run again (a retry, a re-sync) is the same event.
  await context.events?.emit({
    type: 'mail.received',
    source: `email:${context.instance.name}`,
    nativeId: `${settings.mailbox}:${uidValidity}:${uid}`,
    causedBy: [context.task.id],
    data: {
      instance: context.instance.name,
      message_id: facts.message_id || `${uidValidity}/${uid}`,
      from_address: facts.from_address,
      from_domain: facts.from_domain,
      to: facts.to.slice(0, 20),
      subject: facts.subject.slice(0, 300),
      ...(facts.date ? { date: facts.date } : {}),
      folder: settings.mailbox,
      is_noreply: facts.is_noreply,
      authenticated: facts.authentication === 'pass',
      note: notePath,
    },
  });
  await enqueueClassifyAfterCollect(context, notePath, { classifyPriority: facts.authentication === 'fail' ? 9 : 6 });
  return { note: notePath, subject: facts.subject };
}
