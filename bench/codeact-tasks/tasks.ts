// Ten owner tasks over the fixtures, each with two scripted policies that solve it the best way their mode allows:
// - `json`: each reply is a batch of tool calls issued together (independent calls in parallel, as good models do);
//   a call that needs an earlier result waits for the next reply. The policy decides from the results it is given.
// - `code`: each reply is one run_code cell (real JavaScript over `tools.…`) that does the work in the sandbox; the
//   policy reads the cell's value.
// Both apply the same rules (rules.ts) and end with an answer made by the same function from what they found, so
// the outcome (the world after, and the answer) must be equal; the bench checks it.
import { today } from './fixtures.ts';
import {
  classifyMail,
  customerDigestNote,
  customerIssuesNote,
  holdingReply,
  issueLine,
  type MailSummary,
  notifiedPr,
  ownerActionItems,
  type Person,
  personOf,
  prLine,
  unansweredFrom,
} from './rules.ts';

export interface Call {
  name: string;
  arguments: Record<string, unknown>;
}

/** A JSON-mode policy: yields each reply's calls, receives their results in the same order, returns the answer. */
export type JsonPlan = Generator<Call[], string, unknown[]>;
/** A CodeAct policy: yields each cell's code, receives the value it returned, returns the answer. */
type CodePlan = Generator<string, string, unknown>;

export interface OwnerTask {
  name: string;
  /** What the owner asks. */
  prompt: string;
  /** What a discovery-mode model asks search_tools before it writes its cell. */
  discover: string[];
  json(): JsonPlan;
  code(): CodePlan;
}

const call = (name: string, args: Record<string, unknown> = {}): Call => ({ name, arguments: args });
/** One reply's calls, all of whose results have the same shape. */
function* ask<Result>(calls: Call[]): Generator<Call[], Result[], unknown[]> {
  if (calls.length === 0) return [];
  return (yield calls) as Result[];
}
/** One reply's calls, results of any shape. */
function* askMixed(calls: Call[]): Generator<Call[], unknown[], unknown[]> {
  return yield calls;
}
function* cell<Value>(code: string): Generator<string, Value, unknown> {
  return (yield code) as Value;
}

type MailWithBody = MailSummary & { body: string };
interface NoteSummary {
  path: string;
  title: string;
  tags: string[];
}
interface NoteFull extends NoteSummary {
  body: string;
}
interface PrSummary {
  number: number;
  title: string;
  author: string;
  state: string;
  draft: boolean;
  review_state: string;
  labels: string[];
  merged_at: string | null;
}
interface PrFull extends PrSummary {
  body: string;
  files: string[];
}
interface IssueSummary {
  number: number;
  title: string;
  author: string;
  labels: string[];
  updated_at: string;
}

/** "This week": the seven days up to today. */
const since = '2026-11-21';
const staleBefore = '2026-10-28';
const releaseSince = '2026-11-16';

const triageAnswer = (kinds: { id: string; kind: string }[]): string => {
  const counts = new Map<string, number>();
  for (const { kind } of kinds) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  const phishing = kinds.filter((entry) => entry.kind === 'phishing').map((entry) => entry.id);
  return `Triaged ${kinds.length} unread mails: ${[...counts]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([kind, count]) => `${kind} ${count}`)
    .join(', ')}. Phishing: ${phishing.join(', ') || 'none'}.`;
};
const noteAnswer = (path: string, items: string[]): string =>
  `Wrote ${path} with ${items.length} entries: ${items.join(', ') || 'none'}.`;
const quietLabels = (kind: string) => (kind === 'newsletter' || kind === 'notification' ? { mark_read: true } : {});

const triageInbox: OwnerTask = {
  name: 'triage-unread',
  prompt:
    'Triage my unread inbox: label each unread mail customer, newsletter, notification or phishing; mark newsletters and notifications read.',
  discover: ['search mail', 'read a mail', 'label a mail'],
  *json() {
    const [unread] = yield* ask<MailSummary[]>([call('mail_search', { unread: true })]);
    const mails = yield* ask<MailWithBody>((unread ?? []).map((mail) => call('mail_read', { id: mail.id })));
    const kinds = mails.map((mail) => ({ id: mail.id, kind: classifyMail(mail) }));
    yield* ask(kinds.map(({ id, kind }) => call('mail_label', { id, labels: [kind], ...quietLabels(kind) })));
    return triageAnswer(kinds);
  },
  *code() {
    const kinds = yield* cell<{ id: string; kind: string }[]>(`${classifyMail}
const kinds = [];
for (const summary of await tools.mail.search({ unread: true })) {
  const mail = await tools.mail.read({ id: summary.id });
  const kind = classifyMail(mail);
  const quiet = kind === 'newsletter' || kind === 'notification';
  await tools.mail.label({ id: mail.id, labels: [kind], ...(quiet ? { mark_read: true } : {}) });
  kinds.push({ id: mail.id, kind });
}
return kinds;`);
    return triageAnswer(kinds);
  },
};

const prsAwaitingReview: OwnerTask = {
  name: 'prs-awaiting-review',
  prompt: 'Summarise the open pull requests waiting for my review into a draft note prs-awaiting-review.',
  discover: ['list pull requests', 'get a pull request', 'write a draft note'],
  *json() {
    const [open] = yield* ask<PrSummary[]>([call('github_list_prs', { state: 'open' })]);
    const waiting = (open ?? []).filter((pr) => pr.review_state === 'review_requested' && !pr.draft);
    const prs = yield* ask<PrFull>(waiting.map((pr) => call('github_get_pr', { number: pr.number })));
    const [written] = yield* ask<{ path: string }>([
      call('notes_write_draft', {
        name: 'prs-awaiting-review',
        title: 'Pull requests awaiting my review',
        body: prs.map(prLine).join('\n'),
      }),
    ]);
    return noteAnswer(
      written?.path ?? '',
      prs.map((pr) => `#${pr.number}`),
    );
  },
  *code() {
    const { path, numbers } = yield* cell<{ path: string; numbers: string[] }>(`${prLine}
const open = await tools.github.list_prs({ state: 'open' });
const prs = [];
for (const pr of open.filter((pr) => pr.review_state === 'review_requested' && !pr.draft)) {
  prs.push(await tools.github.get_pr({ number: pr.number }));
}
const { path } = await tools.notes.write_draft({
  name: 'prs-awaiting-review',
  title: 'Pull requests awaiting my review',
  body: prs.map(prLine).join('\\n'),
});
return { path, numbers: prs.map((pr) => '#' + pr.number) };`);
    return noteAnswer(path, numbers);
  },
};

/** The first reply of the customer tasks: this week's inbox, the sent mail and the customer notes, at once. */
const customerSearches = [
  call('mail_search', { since }),
  call('mail_search', { folder: 'sent', since }),
  call('notes_search', { tag: 'customer' }),
];
/** The cell's lines that do the same, and read the customers' notes. */
const customerCellPrelude = `${personOf}
${unansweredFrom}
const since = '${since}';
const inbox = await tools.mail.search({ since });
const sent = await tools.mail.search({ folder: 'sent', since });
const customers = [];
for (const note of await tools.notes.search({ tag: 'customer' })) {
  if (note.tags.includes('person')) customers.push(personOf(await tools.notes.read({ path: note.path })));
}`;
function* readCustomers(): Generator<
  Call[],
  { inbox: MailSummary[]; sent: MailSummary[]; customers: Person[] },
  unknown[]
> {
  const [inbox, sent, found] = (yield* askMixed(customerSearches)) as [MailSummary[], MailSummary[], NoteSummary[]];
  const notes = yield* ask<NoteFull>(
    found.filter((note) => note.tags.includes('person')).map((note) => call('notes_read', { path: note.path })),
  );
  return { inbox, sent, customers: notes.map(personOf) };
}

const draftReplies: OwnerTask = {
  name: 'draft-replies',
  prompt: `Today is ${today}. Draft a holding reply to every customer mail this week that I have not answered yet.`,
  discover: ['search mail', 'search notes', 'read a note', 'draft a reply'],
  *json() {
    const { inbox, sent, customers } = yield* readCustomers();
    const waiting = unansweredFrom(inbox, sent, customers);
    yield* ask(waiting.map((mail) => call('mail_draft_reply', { id: mail.id, body: holdingReply(mail, mail.person) })));
    return `Drafted ${waiting.length} replies: ${waiting.map((mail) => `${mail.id} (${mail.person.name})`).join(', ')}.`;
  },
  *code() {
    const drafted = yield* cell<string[]>(`${customerCellPrelude}
${holdingReply}
const drafted = [];
for (const mail of unansweredFrom(inbox, sent, customers)) {
  await tools.mail.draft_reply({ id: mail.id, body: holdingReply(mail, mail.person) });
  drafted.push(mail.id + ' (' + mail.person.name + ')');
}
return drafted;`);
    return `Drafted ${drafted.length} replies: ${drafted.join(', ')}.`;
  },
};

/** Groups waiting mails by sender, in the order senders first appear. */
const bySender = (mails: (MailSummary & { person: Person })[]) => {
  const groups = new Map<string, { person: Person; subjects: string[] }>();
  for (const mail of mails) {
    const group = groups.get(mail.from) ?? { person: mail.person, subjects: [] };
    group.subjects.push(mail.subject);
    groups.set(mail.from, group);
  }
  return [...groups.values()];
};

const customerIssues: OwnerTask = {
  name: 'customer-issues',
  prompt: `Today is ${today}. Find every unanswered mail from a customer this week, check each sender's open GitHub issues, and draft one summary note customer-issues.`,
  discover: ['search mail', 'search notes', 'read a note', 'list github issues', 'write a draft note'],
  *json() {
    const { inbox, sent, customers } = yield* readCustomers();
    const senders = bySender(unansweredFrom(inbox, sent, customers));
    const issues = yield* ask<IssueSummary[]>(
      senders.map((sender) => call('github_list_issues', { state: 'open', author: sender.person.github })),
    );
    const entries = senders.map((sender, index) => ({ ...sender, issues: issues[index] ?? [] }));
    const [written] = yield* ask<{ path: string }>([
      call('notes_write_draft', {
        name: 'customer-issues',
        title: 'Customers waiting, and their open issues',
        body: customerIssuesNote(entries),
      }),
    ]);
    return noteAnswer(
      written?.path ?? '',
      entries.map((entry) => `${entry.person.name} (${entry.issues.length})`),
    );
  },
  *code() {
    const { path, items } = yield* cell<{ path: string; items: string[] }>(`${customerCellPrelude}
${customerIssuesNote}
const entries = [];
for (const mail of unansweredFrom(inbox, sent, customers)) {
  let entry = entries.find((candidate) => candidate.person.email === mail.from);
  if (entry === undefined) {
    entry = { person: mail.person, subjects: [], issues: [] };
    entries.push(entry);
  }
  entry.subjects.push(mail.subject);
}
for (const entry of entries) {
  entry.issues = await tools.github.list_issues({ state: 'open', author: entry.person.github });
}
const { path } = await tools.notes.write_draft({
  name: 'customer-issues',
  title: 'Customers waiting, and their open issues',
  body: customerIssuesNote(entries),
});
return { path, items: entries.map((entry) => entry.person.name + ' (' + entry.issues.length + ')') };`);
    return noteAnswer(path, items);
  },
};

const prsTouchingMail: OwnerTask = {
  name: 'prs-touching-mail',
  prompt:
    'Which open pull requests touch integrations/mail/? Write them with their review state into a draft note prs-touching-mail.',
  discover: ['list pull requests', 'get a pull request', 'write a draft note'],
  *json() {
    const [open] = yield* ask<PrSummary[]>([call('github_list_prs', { state: 'open' })]);
    const prs = yield* ask<PrFull>((open ?? []).map((pr) => call('github_get_pr', { number: pr.number })));
    const touching = prs.filter((pr) => pr.files.some((file) => file.startsWith('integrations/mail/')));
    const [written] = yield* ask<{ path: string }>([
      call('notes_write_draft', {
        name: 'prs-touching-mail',
        title: 'Open pull requests touching integrations/mail/',
        body: touching.map((pr) => `${prLine(pr)} Review: ${pr.review_state}.`).join('\n'),
      }),
    ]);
    return noteAnswer(
      written?.path ?? '',
      touching.map((pr) => `#${pr.number}`),
    );
  },
  *code() {
    const { path, numbers } = yield* cell<{ path: string; numbers: string[] }>(`${prLine}
const touching = [];
for (const summary of await tools.github.list_prs({ state: 'open' })) {
  const pr = await tools.github.get_pr({ number: summary.number });
  if (pr.files.some((file) => file.startsWith('integrations/mail/'))) touching.push(pr);
}
const { path } = await tools.notes.write_draft({
  name: 'prs-touching-mail',
  title: 'Open pull requests touching integrations/mail/',
  body: touching.map((pr) => prLine(pr) + ' Review: ' + pr.review_state + '.').join('\\n'),
});
return { path, numbers: touching.map((pr) => '#' + pr.number) };`);
    return noteAnswer(path, numbers);
  },
};

const staleBugs: OwnerTask = {
  name: 'stale-bugs',
  prompt: `Today is ${today}. List the open bugs nobody touched for a month (no update since ${staleBefore}) in a draft note stale-bugs.`,
  discover: ['list github issues', 'write a draft note'],
  *json() {
    const [bugs] = yield* ask<IssueSummary[]>([call('github_list_issues', { state: 'open', label: 'bug' })]);
    const stale = (bugs ?? []).filter((issue) => issue.updated_at < staleBefore);
    const [written] = yield* ask<{ path: string }>([
      call('notes_write_draft', { name: 'stale-bugs', title: 'Stale bugs', body: stale.map(issueLine).join('\n') }),
    ]);
    return noteAnswer(
      written?.path ?? '',
      stale.map((issue) => `#${issue.number}`),
    );
  },
  *code() {
    const { path, numbers } = yield* cell<{ path: string; numbers: string[] }>(`${issueLine}
const bugs = await tools.github.list_issues({ state: 'open', label: 'bug' });
const stale = bugs.filter((issue) => issue.updated_at < '${staleBefore}');
const { path } = await tools.notes.write_draft({ name: 'stale-bugs', title: 'Stale bugs', body: stale.map(issueLine).join('\\n') });
return { path, numbers: stale.map((issue) => '#' + issue.number) };`);
    return noteAnswer(path, numbers);
  },
};

const releaseNotes: OwnerTask = {
  name: 'release-notes',
  prompt: `Draft release notes (note release-notes) from the pull requests merged since ${releaseSince}.`,
  discover: ['list pull requests', 'get a pull request', 'write a draft note'],
  *json() {
    const [merged] = yield* ask<PrSummary[]>([call('github_list_prs', { state: 'merged' })]);
    const recent = (merged ?? []).filter((pr) => (pr.merged_at ?? '') >= releaseSince);
    const prs = yield* ask<PrFull>(recent.map((pr) => call('github_get_pr', { number: pr.number })));
    const [written] = yield* ask<{ path: string }>([
      call('notes_write_draft', {
        name: 'release-notes',
        title: `Release notes since ${releaseSince}`,
        body: prs.map(prLine).join('\n'),
      }),
    ]);
    return noteAnswer(
      written?.path ?? '',
      prs.map((pr) => `#${pr.number}`),
    );
  },
  *code() {
    const { path, numbers } = yield* cell<{ path: string; numbers: string[] }>(`${prLine}
const prs = [];
for (const pr of await tools.github.list_prs({ state: 'merged' })) {
  if ((pr.merged_at ?? '') >= '${releaseSince}') prs.push(await tools.github.get_pr({ number: pr.number }));
}
const { path } = await tools.notes.write_draft({
  name: 'release-notes',
  title: 'Release notes since ${releaseSince}',
  body: prs.map(prLine).join('\\n'),
});
return { path, numbers: prs.map((pr) => '#' + pr.number) };`);
    return noteAnswer(path, numbers);
  },
};

const notificationsDone = (done: string[], waiting: string[]) =>
  `Marked done: ${done.join(', ') || 'none'}. Still waiting for you: ${waiting.join(', ') || 'none'}.`;

const githubNotifications: OwnerTask = {
  name: 'github-notifications',
  prompt:
    "Go through GitHub's notification mails: label those whose pull request is merged 'done' and mark them read, and tell me which pull requests still wait for me.",
  discover: ['search mail', 'list pull requests', 'label a mail'],
  *json() {
    const [mails, prs] = (yield* askMixed([
      call('mail_search', { from: 'notifications@github.com' }),
      call('github_list_prs', { state: 'all' }),
    ])) as [MailSummary[], PrSummary[]];
    const done: MailSummary[] = [];
    const waiting: string[] = [];
    for (const mail of mails) {
      const pr = prs.find((candidate) => candidate.number === notifiedPr(mail.subject));
      if (pr === undefined) continue;
      if (pr.state === 'merged') done.push(mail);
      else waiting.push(`#${pr.number}`);
    }
    yield* ask(done.map((mail) => call('mail_label', { id: mail.id, labels: ['done'], mark_read: true })));
    return notificationsDone(
      done.map((mail) => `${mail.id} (#${notifiedPr(mail.subject)})`),
      waiting,
    );
  },
  *code() {
    const { done, waiting } = yield* cell<{ done: string[]; waiting: string[] }>(`${notifiedPr}
const mails = await tools.mail.search({ from: 'notifications@github.com' });
const prs = await tools.github.list_prs({ state: 'all' });
const done = [];
const waiting = [];
for (const mail of mails) {
  const pr = prs.find((candidate) => candidate.number === notifiedPr(mail.subject));
  if (pr === undefined) continue;
  if (pr.state === 'merged') {
    await tools.mail.label({ id: mail.id, labels: ['done'], mark_read: true });
    done.push(mail.id + ' (#' + pr.number + ')');
  } else waiting.push('#' + pr.number);
}
return { done, waiting };`);
    return notificationsDone(done, waiting);
  },
};

const actionItems: OwnerTask = {
  name: 'action-items',
  prompt: 'Collect the open action items assigned to me in meeting notes into one to-do draft note my-action-items.',
  discover: ['search notes', 'read a note', 'write a draft note'],
  *json() {
    const [meetings] = yield* ask<NoteSummary[]>([call('notes_search', { tag: 'meeting' })]);
    const notes = yield* ask<NoteFull>((meetings ?? []).map((note) => call('notes_read', { path: note.path })));
    const items = notes.flatMap(ownerActionItems);
    const [written] = yield* ask<{ path: string }>([
      call('notes_write_draft', { name: 'my-action-items', title: 'My action items', body: items.join('\n') }),
    ]);
    return noteAnswer(
      written?.path ?? '',
      items.map((item) => item.slice(6, item.indexOf(' (from'))),
    );
  },
  *code() {
    const { path, items } = yield* cell<{ path: string; items: string[] }>(`${ownerActionItems}
const items = [];
for (const note of await tools.notes.search({ tag: 'meeting' })) {
  items.push(...ownerActionItems(await tools.notes.read({ path: note.path })));
}
const { path } = await tools.notes.write_draft({ name: 'my-action-items', title: 'My action items', body: items.join('\\n') });
return { path, items };`);
    return noteAnswer(
      path,
      items.map((item) => item.slice(6, item.indexOf(' (from'))),
    );
  },
};

const customerDigest: OwnerTask = {
  name: 'customer-digest',
  prompt: `Today is ${today}. Write a digest note customer-digest: for each customer, their mails this week and their open GitHub issues.`,
  discover: ['search notes', 'read a note', 'search mail', 'list github issues', 'write a draft note'],
  *json() {
    const [found, inbox, issues] = (yield* askMixed([
      call('notes_search', { tag: 'customer' }),
      call('mail_search', { since }),
      call('github_list_issues', { state: 'open' }),
    ])) as [NoteSummary[], MailSummary[], IssueSummary[]];
    const notes = yield* ask<NoteFull>(
      found.filter((note) => note.tags.includes('person')).map((note) => call('notes_read', { path: note.path })),
    );
    const entries = notes.map(personOf).map((person) => ({
      person,
      subjects: inbox.filter((mail) => mail.from === person.email).map((mail) => mail.subject),
      issues: issues.filter((issue) => issue.author === person.github),
    }));
    const [written] = yield* ask<{ path: string }>([
      call('notes_write_draft', {
        name: 'customer-digest',
        title: 'Customer digest',
        body: customerDigestNote(entries),
      }),
    ]);
    return noteAnswer(
      written?.path ?? '',
      entries.map((entry) => entry.person.name),
    );
  },
  *code() {
    const { path, names } = yield* cell<{ path: string; names: string[] }>(`${personOf}
${customerDigestNote}
const inbox = await tools.mail.search({ since: '${since}' });
const issues = await tools.github.list_issues({ state: 'open' });
const entries = [];
for (const note of await tools.notes.search({ tag: 'customer' })) {
  if (!note.tags.includes('person')) continue;
  const person = personOf(await tools.notes.read({ path: note.path }));
  entries.push({
    person,
    subjects: inbox.filter((mail) => mail.from === person.email).map((mail) => mail.subject),
    issues: issues.filter((issue) => issue.author === person.github),
  });
}
const { path } = await tools.notes.write_draft({ name: 'customer-digest', title: 'Customer digest', body: customerDigestNote(entries) });
return { path, names: entries.map((entry) => entry.person.name) };`);
    return noteAnswer(path, names);
  },
};

export const ownerTasks: readonly OwnerTask[] = [
  triageInbox,
  prsAwaitingReview,
  draftReplies,
  customerIssues,
  prsTouchingMail,
  staleBugs,
  releaseNotes,
  githubNotifications,
  actionItems,
  customerDigest,
];
