// The fixture tools: what an owner's mail, GitHub and notes integrations offer, over the in-memory World. Written
// once with defineTool: the JSON mode shows their specs, and codeTools turns the same tools into run_code's
// `tools.mail.search(…)` namespace. Reads return what a real integration would (lists without bodies, a read with
// the body), so what the model has to read costs what it would.
import { defineTool, type Tool } from '@assistant/agent';
import * as z from 'zod';
import type { Mail, World } from './fixtures.ts';

const summaryOf = (mail: Mail) => ({
  id: mail.id,
  from: mail.from,
  to: mail.to,
  subject: mail.subject,
  date: mail.date,
  unread: mail.unread,
  thread: mail.thread,
  labels: mail.labels,
});

const find = <Item>(items: readonly Item[], match: (item: Item) => boolean, what: string): Item => {
  const item = items.find(match);
  if (item === undefined) throw new Error(`no ${what}`);
  return item;
};

export function fixtureTools(world: World): Tool[] {
  return [
    defineTool({
      name: 'mail_search',
      description:
        'Searches the mailbox. Returns matching mails newest first, without their bodies (id, from, to, subject, date, unread, thread, labels). Use mail_read for a body.',
      input: z.strictObject({
        folder: z.enum(['inbox', 'sent']).optional().describe('Which folder; default inbox.'),
        from: z.string().optional().describe('Sender address or domain, matched case-insensitively as a substring.'),
        unread: z.boolean().optional().describe('Only unread (true) or only read (false) mails.'),
        since: z.string().optional().describe('ISO date: only mails on or after it.'),
        text: z.string().optional().describe('Words that must appear in the subject.'),
        limit: z.int().min(1).max(100).optional().describe('At most this many; default 50.'),
      }),
      tier: 'read_only',
      codePath: ['mail', 'search'],
      run: async ({ folder, from, unread, since, text, limit }) =>
        world.mails
          .filter((mail) => mail.folder === (folder ?? 'inbox'))
          .filter((mail) => from === undefined || mail.from.toLowerCase().includes(from.toLowerCase()))
          .filter((mail) => unread === undefined || mail.unread === unread)
          .filter((mail) => since === undefined || mail.date >= since)
          .filter((mail) => text === undefined || mail.subject.toLowerCase().includes(text.toLowerCase()))
          .sort((a, b) => b.date.localeCompare(a.date))
          .slice(0, limit ?? 50)
          .map(summaryOf),
    }),
    defineTool({
      name: 'mail_read',
      description: 'Reads one mail by id, with its body. Does not mark it read.',
      input: z.strictObject({ id: z.string().describe('The mail id from mail_search.') }),
      tier: 'read_only',
      codePath: ['mail', 'read'],
      run: async ({ id }) => {
        const found = find(world.mails, (mail) => mail.id === id, `mail ${id}`);
        return { ...summaryOf(found), body: found.body };
      },
    }),
    defineTool({
      name: 'mail_label',
      description:
        'Adds labels to a mail (customer, newsletter, notification, phishing, done, …) and optionally marks it read. Labels already on the mail are kept.',
      input: z.strictObject({
        id: z.string(),
        labels: z.array(z.string().min(1)).min(1),
        mark_read: z.boolean().optional().describe('Also mark the mail read.'),
      }),
      tier: 'soft',
      codePath: ['mail', 'label'],
      run: async ({ id, labels, mark_read }) => {
        const found = find(world.mails, (mail) => mail.id === id, `mail ${id}`);
        for (const label of labels) if (!found.labels.includes(label)) found.labels.push(label);
        if (mark_read === true) found.unread = false;
        return { id, labels: found.labels, unread: found.unread };
      },
    }),
    defineTool({
      name: 'mail_draft_reply',
      description:
        'Writes a draft reply to a mail, in its thread, for the owner to review and send. Nothing is sent. Returns the draft.',
      input: z.strictObject({
        id: z.string().describe('The mail to answer.'),
        body: z.string().min(1).describe('The reply text.'),
      }),
      tier: 'soft',
      codePath: ['mail', 'draft_reply'],
      run: async ({ id, body }) => {
        const found = find(world.mails, (mail) => mail.id === id, `mail ${id}`);
        const draft = {
          mailId: id,
          to: found.from,
          subject: found.subject.startsWith('Re: ') ? found.subject : `Re: ${found.subject}`,
          body,
        };
        world.drafts.push(draft);
        return { draft: world.drafts.length, ...draft };
      },
    }),
    defineTool({
      name: 'github_list_prs',
      description:
        'Lists pull requests of the repository northwind/assistant: number, title, author, state, draft, review state, labels, dates. No bodies or files; see github_get_pr.',
      input: z.strictObject({
        state: z.enum(['open', 'closed', 'merged', 'all']).optional().describe('Default open.'),
        author: z.string().optional().describe('GitHub login.'),
      }),
      tier: 'read_only',
      codePath: ['github', 'list_prs'],
      run: async ({ state, author }) =>
        world.pullRequests
          .filter((pr) => (state ?? 'open') === 'all' || pr.state === (state ?? 'open'))
          .filter((pr) => author === undefined || pr.author === author)
          .map(({ files: _files, body: _body, ...summary }) => summary),
    }),
    defineTool({
      name: 'github_get_pr',
      description: 'Gets one pull request with its description and the files it changes.',
      input: z.strictObject({ number: z.int().positive() }),
      tier: 'read_only',
      codePath: ['github', 'get_pr'],
      run: async ({ number }) => find(world.pullRequests, (pr) => pr.number === number, `pull request #${number}`),
    }),
    defineTool({
      name: 'github_list_issues',
      description:
        'Lists issues of northwind/assistant with their short bodies: number, title, author, state, labels, dates, comment count.',
      input: z.strictObject({
        state: z.enum(['open', 'closed', 'all']).optional().describe('Default open.'),
        author: z.string().optional().describe('GitHub login.'),
        label: z.string().optional(),
      }),
      tier: 'read_only',
      codePath: ['github', 'list_issues'],
      run: async ({ state, author, label }) =>
        world.issues
          .filter((issue) => (state ?? 'open') === 'all' || issue.state === (state ?? 'open'))
          .filter((issue) => author === undefined || issue.author === author)
          .filter((issue) => label === undefined || issue.labels.includes(label)),
    }),
    defineTool({
      name: 'notes_search',
      description:
        "Searches the owner's notes by words in the title or body, or by tag. Returns path, title and tags, no body.",
      input: z.strictObject({
        query: z.string().optional().describe('Words that must appear in the title or body.'),
        tag: z.string().optional(),
      }),
      tier: 'read_only',
      codePath: ['notes', 'search'],
      run: async ({ query, tag }) =>
        world.notes
          .filter((note) => tag === undefined || note.tags.includes(tag))
          .filter(
            (note) =>
              query === undefined ||
              query
                .toLowerCase()
                .split(/\s+/)
                .every((word) => `${note.title}\n${note.body}`.toLowerCase().includes(word)),
          )
          .map(({ path, title, tags }) => ({ path, title, tags })),
    }),
    defineTool({
      name: 'notes_read',
      description: 'Reads one note by path: title, tags and body.',
      input: z.strictObject({ path: z.string() }),
      tier: 'read_only',
      codePath: ['notes', 'read'],
      run: async ({ path }) => find(world.notes, (note) => note.path === path, `note ${path}`),
    }),
    defineTool({
      name: 'notes_write_draft',
      description:
        'Writes (or replaces) a note under drafts/ for the owner to read: a summary, a digest, a to-do list. Returns its path.',
      input: z.strictObject({
        name: z
          .string()
          .regex(/^[a-z0-9-]+$/)
          .describe('File name without .md: lowercase letters, digits and dashes.'),
        title: z.string().min(1),
        body: z.string().min(1).describe('Markdown.'),
      }),
      tier: 'soft',
      codePath: ['notes', 'write_draft'],
      run: async ({ name, title, body }) => {
        const path = `drafts/${name}.md`;
        world.notes = world.notes.filter((note) => note.path !== path);
        world.notes.push({ path, title, tags: ['draft'], body });
        return { path };
      },
    }),
  ];
}
