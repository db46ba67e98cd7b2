import { needsClassification } from '@assistant/sdk';
import type { EmailContext } from './email-settings.ts';
import { messageNotePath } from './email-settings.ts';
import { withImap } from './imap-session.ts';
import { folderPath, listMaildir, resolveMaildir } from './maildir.ts';

interface Listing {
  uidValidity: string;
  messages: { uid: number | string; flags: string[]; messageId: string }[];
}

async function listFromMaildir(context: EmailContext, since: Date): Promise<Listing> {
  const settings = context.instance.settings;
  const root = resolveMaildir(settings.maildir ?? '', context.configDir);
  const messages = (await listMaildir(await folderPath(root, settings.mailbox)))
    .filter((message) => message.mtimeMs >= since.getTime())
    .slice(-settings.limit);
  return {
    uidValidity: 'maildir',
    messages: messages.map((message) => ({ uid: message.id, flags: message.flags, messageId: '' })),
  };
}

/**
 * `email.inbox.check`: one connection lists the newest messages within `window` and `limit`, and enqueues `collect`
 * only for messages without a note (identified by UIDVALIDITY and UID), and `classify` for known ones whose note has
 * no classification of its current content. Known messages get their flags refreshed; a
 * note whose message left the mailbox is marked `synced: gone`, never deleted.
 */
export async function check(context: EmailContext) {
  const settings = context.instance.settings;
  const folder = `email/${context.instance.name.replace(/[^A-Za-z0-9._-]/g, '_')}`;
  const since = new Date(Date.now() - settings.window);
  const listing: Listing = settings.maildir
    ? await listFromMaildir(context, since)
    : await withImap(settings, context.signal, async (client) => {
        const lock = await client.getMailboxLock(settings.mailbox);
        try {
          const mailbox = client.mailbox;
          const uidValidity = mailbox ? String(mailbox.uidValidity) : '0';
          const found = (await client.search({ since }, { uid: true })) || [];
          const uids = found.sort((left, right) => left - right).slice(-settings.limit);
          const messages =
            uids.length === 0
              ? []
              : await client.fetchAll(uids, { uid: true, flags: true, envelope: true, size: true }, { uid: true });
          return {
            uidValidity,
            messages: messages.map((message) => ({
              uid: message.uid,
              flags: [...(message.flags ?? [])].sort(),
              messageId: message.envelope?.messageId ?? '',
            })),
          };
        } finally {
          lock.release();
        }
      });
  const present = new Set<string>();
  const listed = new Set(
    listing.messages.map((message) => messageNotePath(context.instance.name, listing.uidValidity, message.uid)),
  );
  let enqueued = 0;
  let refreshed = 0;
  let relinked = 0;
  let reclassify = 0;
  // Read once, and only when some UID is new.
  let byMessageId: Map<string, string> | undefined;
  const notesByMessageId = async () => {
    if (!byMessageId) {
      byMessageId = new Map();
      for (const note of await context.notes.query({ folder })) {
        if (typeof note.data.message_id === 'string' && note.data.message_id)
          byMessageId.set(note.data.message_id, note.path);
      }
    }
    return byMessageId;
  };
  for (const message of listing.messages) {
    const notePath = messageNotePath(context.instance.name, listing.uidValidity, message.uid);
    present.add(notePath);
    const note = await context.notes.read(notePath).catch(() => undefined);
    if (!note) {
      // The same message under another UID (moved back into the mailbox, or a UIDVALIDITY reset): move its note to
      // the new identity instead of collecting, classifying and acting on it again.
      const known = message.messageId ? (await notesByMessageId()).get(message.messageId) : undefined;
      if (known && known !== notePath && !listed.has(known)) {
        await context.notes.move(known, notePath);
        await context.notes.update(notePath, {
          set: {
            uid: message.uid,
            uid_validity: listing.uidValidity,
            mailbox: settings.mailbox,
            flags: message.flags,
            synced: 'present',
          },
        });
        relinked += 1;
        continue;
      }
      const outcome = await context.enqueue({
        stage: 'collect',
        payload: { uid: message.uid, uid_validity: listing.uidValidity },
      });
      if (outcome.status === 'enqueued') enqueued += 1;
      continue;
    }
    if (needsClassification(note.data)) {
      // Collected, but never classified (its task failed or was removed): ask again. A classify task already pending or running for it makes this a duplicate, skipped.
      const outcome = await context.enqueue({
        stage: 'classify',
        payload: { note: notePath },
        ...(note.data.authentication === 'fail' ? { priority: 9 } : {}),
      });
      if (outcome.status === 'enqueued') reclassify += 1;
    }
    const flags = Array.isArray(note.data.flags) ? (note.data.flags as string[]) : [];
    if (JSON.stringify(flags) !== JSON.stringify(message.flags) || note.data.synced !== 'present') {
      await context.notes.update(notePath, { set: { flags: message.flags, synced: 'present' } });
      refreshed += 1;
    }
  }
  let gone = 0;
  for (const notePath of await context.notes.list(folder)) {
    if (present.has(notePath)) continue;
    const note = await context.notes.read(notePath).catch(() => undefined);
    if (!note || note.data.synced === 'gone' || note.data.mailbox !== settings.mailbox) continue;
    // Outside the window it may simply be old: only a message within the window that is missing has left.
    const date = typeof note.data.date === 'string' ? Date.parse(note.data.date) : Number.NaN;
    if (!Number.isNaN(date) && date < since.getTime()) continue;
    await context.notes.update(notePath, { set: { synced: 'gone' } });
    gone += 1;
  }
  if (enqueued + gone > 0) {
    await context.log.human(`${enqueued} new messages in ${settings.mailbox}${gone > 0 ? `, ${gone} gone` : ''}`, {
      reason: `checked the newest ${listing.messages.length} within ${Math.round(settings.window / 86_400_000)} days`,
    });
  }
  if (reclassify > 0) {
    await context.log.human(`${reclassify} messages in ${settings.mailbox} sent to be classified again`, {
      reason: 'their notes have no classification for their current content',
    });
  }
  return { listed: listing.messages.length, enqueued, refreshed, relinked, gone, reclassify };
}
