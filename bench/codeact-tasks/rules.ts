// How the owner wants things decided, written once: the JSON-mode policy applies these functions to what its tool
// calls returned, and the CodeAct policy's cells carry their source (`${classifyMail}`) and apply them in the
// sandbox. So both modes follow the same plan and must reach the same outcome; only the protocol differs. Each is
// self-contained (no imports, no closures), because its text is what runs in a cell.

export interface MailSummary {
  id: string;
  from: string;
  subject: string;
  date: string;
  unread: boolean;
  thread: string;
  labels: string[];
}

export interface Person {
  name: string;
  email: string;
  github: string;
  company: string;
}

/** Triage: a link that asks to verify is phishing; a list with an unsubscribe link a newsletter; machines notify. */
export function classifyMail(mail: { from: string; body: string }): string {
  const links = mail.body.match(/https?:\/\/[^\s/]+/g) ?? [];
  if (links.length > 0 && /verify|confirm|suspend|limited|deleted/i.test(mail.body)) return 'phishing';
  if (/unsubscribe/i.test(mail.body)) return 'newsletter';
  if (/automated|you are receiving this/i.test(mail.body) || /^(noreply|notifications|status)@/.test(mail.from)) {
    return 'notification';
  }
  return 'customer';
}

/** A person note's `key: value` lines. */
export function personOf(note: { title: string; body: string }): Person {
  const field = (key: string) => (note.body.match(new RegExp(`^${key}: (.+)$`, 'm')) ?? [])[1] ?? '';
  return { name: note.title, email: field('email'), github: field('github'), company: field('company') };
}

/** Inbox mails from customers that no sent mail in their thread answered after they arrived. */
export function unansweredFrom(
  inbox: MailSummary[],
  sent: MailSummary[],
  customers: Person[],
): (MailSummary & { person: Person })[] {
  const result: (MailSummary & { person: Person })[] = [];
  for (const mail of inbox) {
    const person = customers.find((candidate) => candidate.email === mail.from);
    if (person === undefined) continue;
    if (sent.some((reply) => reply.thread === mail.thread && reply.date > mail.date)) continue;
    result.push({ ...mail, person });
  }
  return result;
}

/** The holding reply the owner sends while looking into something. */
export function holdingReply(mail: { subject: string }, person: { name: string }): string {
  const first = person.name.split(' ')[0];
  const subject = mail.subject.replace(/^Re: /, '');
  return `Hi ${first},\n\nthanks for your message about "${subject}". I am looking into it and will get back to you by Tuesday.\n\nBest,\nSam`;
}

/** A PR as one line of a summary note. */
export function prLine(pr: { number: number; title: string; author: string; body: string; files: string[] }): string {
  return `- #${pr.number} ${pr.title} (${pr.author}, ${pr.files.length} files): ${pr.body}`;
}

/** An issue as one line of a summary note. */
export function issueLine(issue: { number: number; title: string; labels: string[]; updated_at: string }): string {
  return `- #${issue.number} ${issue.title} [${issue.labels.join(', ')}], last update ${issue.updated_at.slice(0, 10)}`;
}

/** The open `- [ ]` items of a meeting note assigned to the owner ("(Sam)"). */
export function ownerActionItems(note: { path: string; body: string }): string[] {
  return note.body
    .split('\n')
    .filter((line) => line.startsWith('- [ ] ') && line.includes('(Sam)'))
    .map((line) => `${line.replace(' (Sam)', '')} (from ${note.path})`);
}

/** The PR a GitHub notification is about, from its subject; 0 for issues and others. */
export function notifiedPr(subject: string): number {
  return Number((subject.match(/\] PR #(\d+):/) ?? [])[1] ?? 0);
}

/** The note of task customer-issues: each waiting customer, what they wrote, their open issues. */
export function customerIssuesNote(
  entries: {
    person: Person;
    subjects: string[];
    issues: { number: number; title: string; labels: string[]; updated_at: string }[];
  }[],
): string {
  return entries
    .map((entry) =>
      [
        `## ${entry.person.name} (${entry.person.company})`,
        `Waiting for an answer: ${entry.subjects.map((subject) => `"${subject}"`).join(', ')}`,
        ...(entry.issues.length === 0
          ? ['- no open issues']
          : entry.issues.map(
              (issue) =>
                `- #${issue.number} ${issue.title} [${issue.labels.join(', ')}], last update ${issue.updated_at.slice(0, 10)}`,
            )),
      ].join('\n'),
    )
    .join('\n\n');
}

/** The note of task customer-digest: per customer, this week's mail and open issues. */
export function customerDigestNote(
  entries: { person: Person; subjects: string[]; issues: { number: number; title: string }[] }[],
): string {
  return entries
    .map((entry) =>
      [
        `## ${entry.person.name} (${entry.person.company})`,
        `- mails this week: ${entry.subjects.length}${entry.subjects.length === 0 ? '' : ` (${entry.subjects.join('; ')})`}`,
        `- open issues: ${entry.issues.length === 0 ? 'none' : entry.issues.map((issue) => `#${issue.number} ${issue.title}`).join('; ')}`,
      ].join('\n'),
    )
    .join('\n\n');
}
