// The world the ten owner tasks run over: a small inbox (with the owner's sent mail), a repository's pull requests
// and issues, and a few notes. Realistic in shape and size, so what the model reads costs what it would. Each run
// starts from a fresh copy (createWorld) and the tools change only that copy.

/** "Today", for the tasks that say "this week": every task's prompt names it. */
export const today = '2026-11-27';
const owner = 'sam@northwind.dev';

export interface Mail {
  id: string;
  folder: 'inbox' | 'sent';
  from: string;
  to: string;
  subject: string;
  date: string;
  unread: boolean;
  thread: string;
  body: string;
  labels: string[];
}

interface PullRequest {
  number: number;
  title: string;
  author: string;
  state: 'open' | 'closed' | 'merged';
  draft: boolean;
  review_state: 'review_requested' | 'approved' | 'changes_requested' | 'none';
  labels: string[];
  updated_at: string;
  merged_at: string | null;
  files: string[];
  body: string;
}

interface Issue {
  number: number;
  title: string;
  author: string;
  state: 'open' | 'closed';
  labels: string[];
  created_at: string;
  updated_at: string;
  comments: number;
  body: string;
}

interface Note {
  path: string;
  title: string;
  tags: string[];
  body: string;
}

const mail = (
  id: string,
  from: string,
  subject: string,
  date: string,
  thread: string,
  body: string,
  extra: Partial<Mail> = {},
): Mail => ({ id, folder: 'inbox', from, to: owner, subject, date, unread: true, thread, body, labels: [], ...extra });

const inbox: Mail[] = [
  mail(
    'm01',
    'ines@brightlane.io',
    'Export to CSV drops the last row',
    '2026-11-26T08:14:00Z',
    't01',
    'Hi Sam,\n\nsince Monday the CSV export of the weekly report is missing its last row (the totals). We send that file to our accountant every Friday, so it would be great to have it fixed before then. I opened an issue on GitHub with a sample file.\n\nThanks,\nInes',
  ),
  mail(
    'm02',
    'news@jsweekly.dev',
    'JavaScript Weekly #712: the state of bundlers',
    '2026-11-26T07:00:00Z',
    't02',
    'This week: Rolldown reaches 1.0, a deep dive into import attributes, and why your source maps are wrong.\n\nRead online | Unsubscribe from this list',
  ),
  mail(
    'm03',
    'notifications@github.com',
    '[northwind/assistant] PR #141: Retry IMAP IDLE after network loss (merged)',
    '2026-11-25T16:40:00Z',
    't03',
    'Merged #141 into main.\n\nYou are receiving this because you were requested to review.\nReply to this email directly or view it on GitHub.',
  ),
  mail(
    'm04',
    'security@paypa1-support.com',
    'Your account is limited - verify now',
    '2026-11-25T11:02:00Z',
    't04',
    'Dear customer, we noticed unusual activity. Your account is limited until you verify your identity within 24 hours: http://paypa1-support.com/verify. Failure to verify will result in permanent suspension.',
  ),
  mail(
    'm05',
    'tom@harbor-freight.co',
    'Invoice question for November',
    '2026-11-24T14:30:00Z',
    't05',
    'Hello Sam,\n\nour November invoice lists 14 seats but we only have 12 active users. Could you check and send a corrected invoice? Also, is annual billing possible?\n\nBest,\nTom',
  ),
  mail(
    'm06',
    'billing@cloudhost.net',
    'Your invoice for November is ready',
    '2026-11-24T06:00:00Z',
    't06',
    'Your invoice INV-2026-11-0457 for 48.20 EUR is available in the billing console. This is an automated message; replies are not monitored.',
  ),
  mail(
    'm07',
    'ines@brightlane.io',
    'Re: Webhook retries',
    '2026-11-23T18:12:00Z',
    't07',
    'Sam, thanks for the quick answer last week. One follow-up: do retries keep the original delivery id? Our deduplication depends on it.\n\nInes',
    { unread: false },
  ),
  mail(
    'm08',
    'newsletter@stratechery.com',
    'The end of the free tier',
    '2026-11-23T12:00:00Z',
    't08',
    'Today: why every developer platform is retiring its free tier, and what that means for small teams.\n\nManage your subscription or unsubscribe.',
    { unread: false },
  ),
  mail(
    'm09',
    'noreply@calendar.example.com',
    'Reminder: quarterly planning on Monday 10:00',
    '2026-11-23T08:00:00Z',
    't09',
    'Quarterly planning, Monday 30 November, 10:00-11:30, room Atlas. This is an automated reminder.',
  ),
  mail(
    'm10',
    'priya@lumen-analytics.com',
    'Feature request: SSO with Okta',
    '2026-11-22T10:45:00Z',
    't10',
    'Hi Sam,\n\nour security team requires SSO for every tool we buy. Do you support Okta (SAML or OIDC)? If it is on the roadmap, a rough date would help our procurement.\n\nRegards,\nPriya',
  ),
  mail(
    'm11',
    'notifications@github.com',
    '[northwind/assistant] Issue #212 opened by ines-b: CSV export drops the totals row',
    '2026-11-26T08:20:00Z',
    't11',
    'ines-b opened an issue: CSV export drops the totals row.\n\nYou are receiving this because you are subscribed to this repository.',
  ),
  mail(
    'm12',
    'admin@micros0ft-security.net',
    'Unusual sign-in activity detected',
    '2026-11-22T03:10:00Z',
    't12',
    'We detected a sign-in from an unknown device. If this was not you, confirm your password within 12 hours here: http://micros0ft-security.net/confirm or your mailbox will be deleted.',
  ),
  mail(
    'm13',
    'tom@harbor-freight.co',
    'Re: Onboarding call',
    '2026-11-19T09:30:00Z',
    't13',
    'Thanks for the call yesterday, all clear on our side. Tom',
    { unread: false },
  ),
  mail(
    'm14',
    'digest@producthunt.com',
    'Top products this week',
    '2026-11-21T07:00:00Z',
    't14',
    'The five products everyone talked about this week. Unsubscribe at any time.',
  ),
  mail(
    'm15',
    'notifications@github.com',
    '[northwind/assistant] PR #147: Faster note search with a trigram index (review requested)',
    '2026-11-21T15:05:00Z',
    't15',
    'lea-k requested your review on #147.\n\nYou are receiving this because your review was requested.',
  ),
  mail(
    'm16',
    'priya@lumen-analytics.com',
    'Re: Trial extension',
    '2026-11-18T16:00:00Z',
    't16',
    'Thank you, the extra two weeks help a lot. Priya',
    { unread: false },
  ),
  mail(
    'm17',
    'marco@tessera.design',
    'Dashboard shows times in UTC',
    '2026-11-25T13:22:00Z',
    't17',
    'Hi,\n\nthe dashboard shows every time in UTC although my profile says Europe/Rome. Is there a setting I missed?\n\nCiao,\nMarco',
  ),
  mail(
    'm18',
    'notifications@github.com',
    '[northwind/assistant] PR #150: Dashboard: show times in the owner time zone (review requested)',
    '2026-11-25T17:45:00Z',
    't18',
    'omar-d requested your review on #150.\n\nYou are receiving this because your review was requested.',
  ),
  mail(
    'm19',
    'status@cloudhost.net',
    'Scheduled maintenance on 2 December',
    '2026-11-25T09:00:00Z',
    't19',
    'Database clusters in eu-west will restart between 02:00 and 03:00 UTC on 2 December. No action is needed. This is an automated message.',
  ),
  mail(
    'm20',
    'marco@tessera.design',
    'Re: Quote for the design system',
    '2026-11-20T10:00:00Z',
    't20',
    'Quote accepted, thanks Sam. Marco',
    { unread: false },
  ),
  mail(
    'm21',
    'news@changelog.com',
    'Changelog Weekly: local-first is back',
    '2026-11-20T06:30:00Z',
    't21',
    'Local-first software, CRDTs in production, and a new SQLite release. Unsubscribe.',
    { unread: false },
  ),
  mail(
    'm22',
    'ines@brightlane.io',
    'Seats for January',
    '2026-11-12T10:00:00Z',
    't22',
    'We will add three seats in January. Ines',
    { unread: false },
  ),
  mail(
    'm23',
    'notifications@github.com',
    '[northwind/assistant] PR #138: Calendar sync for recurring events (merged)',
    '2026-11-20T11:00:00Z',
    't23',
    'Merged #138 into main.\n\nYou are receiving this because you authored the thread.',
    { unread: false },
  ),
  mail(
    'm24',
    'hr@northwind.dev',
    'Holiday schedule',
    '2026-11-24T12:00:00Z',
    't24',
    'The office is closed from 24 December to 1 January. Enjoy the break. This is an automated message from the HR system.',
  ),
  mail(
    'm25',
    'jonas@quay-logistics.de',
    'API rate limits for the bulk import',
    '2026-11-26T15:10:00Z',
    't25',
    'Hello Sam,\n\nour nightly bulk import hits 429s after about 2000 requests. What are the documented limits, and can they be raised for our plan?\n\nJonas',
  ),
];

const sent: Mail[] = [
  mail(
    's01',
    owner,
    'Re: Webhook retries',
    '2026-11-16T09:00:00Z',
    't07',
    'Hi Ines, retries use exponential back-off.',
    {
      folder: 'sent',
      to: 'ines@brightlane.io',
      unread: false,
    },
  ),
  mail('s02', owner, 'Re: Onboarding call', '2026-11-19T10:00:00Z', 't13', 'Great, talk soon. Sam', {
    folder: 'sent',
    to: 'tom@harbor-freight.co',
    unread: false,
  }),
  mail(
    's03',
    owner,
    'Re: Dashboard shows times in UTC',
    '2026-11-25T14:00:00Z',
    't17',
    'Hi Marco, not yet: a fix is in review (#150). Sam',
    { folder: 'sent', to: 'marco@tessera.design', unread: false },
  ),
];

const pr = (
  number: number,
  title: string,
  author: string,
  state: PullRequest['state'],
  review_state: PullRequest['review_state'],
  updated_at: string,
  files: string[],
  body: string,
  extra: Partial<PullRequest> = {},
): PullRequest => ({
  number,
  title,
  author,
  state,
  draft: false,
  review_state,
  labels: [],
  updated_at,
  merged_at: state === 'merged' ? updated_at : null,
  files,
  body,
  ...extra,
});

const pullRequests: PullRequest[] = [
  pr(
    138,
    'Calendar sync for recurring events',
    'sam-n',
    'merged',
    'approved',
    '2026-11-20T11:00:00Z',
    ['integrations/calendar/src/sync.ts', 'integrations/calendar/src/rrule.ts'],
    'Expands RRULEs into instances within the sync window; exceptions (EXDATE) honoured.',
    { labels: ['feature'] },
  ),
  pr(
    141,
    'Retry IMAP IDLE after network loss',
    'lea-k',
    'merged',
    'approved',
    '2026-11-25T16:40:00Z',
    ['integrations/mail/src/idle.ts', 'integrations/mail/src/idle.test.ts'],
    'IDLE now reconnects with back-off after ECONNRESET instead of stopping the watcher.',
    { labels: ['bug', 'mail'] },
  ),
  pr(
    144,
    'Bump zod to 4.1',
    'dependabot',
    'open',
    'none',
    '2026-11-24T04:00:00Z',
    ['package.json', 'package-lock.json'],
    'Bumps zod from 4.0.17 to 4.1.3.',
    { labels: ['dependencies'] },
  ),
  pr(
    147,
    'Faster note search with a trigram index',
    'lea-k',
    'open',
    'review_requested',
    '2026-11-21T15:05:00Z',
    ['packages/notes/src/search.ts', 'packages/notes/src/trigram-index.ts', 'packages/notes/src/search.test.ts'],
    'Builds a trigram index on startup and updates it on write; search over 20k notes drops from 180 ms to 6 ms.',
    { labels: ['performance'] },
  ),
  pr(
    149,
    'Mail: thread replies by References header',
    'omar-d',
    'open',
    'changes_requested',
    '2026-11-23T10:30:00Z',
    ['integrations/mail/src/threading.ts', 'integrations/mail/src/threading.test.ts'],
    'Groups replies by References/In-Reply-To instead of subject. Review asked for a fallback when headers are missing.',
    { labels: ['mail'] },
  ),
  pr(
    150,
    'Dashboard: show times in the owner time zone',
    'omar-d',
    'open',
    'review_requested',
    '2026-11-25T17:45:00Z',
    ['apps/server/src/dashboard/format-time.ts', 'packages/config/src/settings.ts'],
    'Reads `owner.time_zone` from config.yaml and formats every dashboard time with it. Fixes #205.',
    { labels: ['bug'] },
  ),
  pr(
    151,
    'WIP: CSV export rewrite',
    'sam-n',
    'open',
    'none',
    '2026-11-26T19:00:00Z',
    ['apps/server/src/export/csv.ts'],
    'Streams rows instead of building the file in memory. Not ready.',
    { draft: true },
  ),
  pr(
    152,
    'Mail: send drafts through the outbound queue',
    'lea-k',
    'open',
    'review_requested',
    '2026-11-26T12:10:00Z',
    ['integrations/mail/src/send.ts', 'packages/outbound/src/queue.ts'],
    'Drafts approved in the dashboard are sent by the outbound queue with retries, not inline.',
    { labels: ['mail'] },
  ),
];

const issue = (
  number: number,
  title: string,
  author: string,
  state: Issue['state'],
  labels: string[],
  created_at: string,
  updated_at: string,
  comments: number,
  body: string,
): Issue => ({ number, title, author, state, labels, created_at, updated_at, comments, body });

const issues: Issue[] = [
  issue(
    190,
    'Webhook retries change the delivery id',
    'ines-b',
    'open',
    ['bug', 'webhooks'],
    '2026-10-02T09:00:00Z',
    '2026-10-05T12:00:00Z',
    3,
    'Each retry gets a new X-Delivery-Id, which breaks our deduplication.',
  ),
  issue(
    193,
    'Support Okta SSO',
    'priya-s',
    'open',
    ['feature', 'auth'],
    '2026-10-10T10:00:00Z',
    '2026-11-22T11:00:00Z',
    6,
    'We need SAML or OIDC SSO with Okta to roll out beyond the pilot team.',
  ),
  issue(
    196,
    'Rate limit headers missing on 429',
    'jonas-q',
    'open',
    ['bug', 'api'],
    '2026-10-14T08:00:00Z',
    '2026-10-14T08:00:00Z',
    0,
    'A 429 response has no Retry-After or X-RateLimit-* headers.',
  ),
  issue(
    198,
    'Typo in the settings page',
    'marco-t',
    'closed',
    ['docs'],
    '2026-10-20T16:00:00Z',
    '2026-10-21T09:00:00Z',
    1,
    '"Notifcations" should be "Notifications".',
  ),
  issue(
    201,
    'Dark mode for the dashboard',
    'marco-t',
    'open',
    ['feature', 'dashboard'],
    '2026-10-28T13:00:00Z',
    '2026-11-02T10:00:00Z',
    4,
    'The dashboard is very bright at night; a dark theme would help.',
  ),
  issue(
    203,
    'Import fails on CSV files with BOM',
    'tom-h',
    'closed',
    ['bug', 'import'],
    '2026-11-01T10:00:00Z',
    '2026-11-08T15:00:00Z',
    2,
    'A UTF-8 BOM makes the first column name unreadable.',
  ),
  issue(
    205,
    'Dashboard times shown in UTC',
    'marco-t',
    'open',
    ['bug', 'dashboard'],
    '2026-11-25T13:30:00Z',
    '2026-11-25T17:45:00Z',
    1,
    'All times are UTC regardless of the profile time zone.',
  ),
  issue(
    207,
    'Bulk import: document the limits',
    'jonas-q',
    'open',
    ['docs', 'api'],
    '2026-11-05T09:00:00Z',
    '2026-11-05T09:00:00Z',
    0,
    'The API docs do not say how many requests a bulk import may make per minute.',
  ),
  issue(
    209,
    'Flaky test: calendar sync across DST',
    'lea-k',
    'open',
    ['bug', 'tests'],
    '2026-11-10T10:00:00Z',
    '2026-11-10T10:00:00Z',
    0,
    'sync.test.ts fails one run in fifty around the end of DST.',
  ),
  issue(
    210,
    'Invoice shows deactivated seats',
    'tom-h',
    'open',
    ['bug', 'billing'],
    '2026-11-24T15:00:00Z',
    '2026-11-24T15:00:00Z',
    0,
    'Seats deactivated mid-month are still billed for the full month.',
  ),
  issue(
    211,
    'Audit log export',
    'priya-s',
    'open',
    ['feature', 'auth'],
    '2026-11-15T10:00:00Z',
    '2026-11-15T10:00:00Z',
    2,
    'Security reviews need an export of the audit log as CSV or JSON.',
  ),
  issue(
    212,
    'CSV export drops the totals row',
    'ines-b',
    'open',
    ['bug', 'export'],
    '2026-11-26T08:20:00Z',
    '2026-11-26T08:20:00Z',
    0,
    'The weekly report CSV ends one row early; the totals row is missing. Sample attached.',
  ),
];

const note = (path: string, title: string, tags: string[], body: string): Note => ({ path, title, tags, body });

const notes: Note[] = [
  note(
    'people/ines-berg.md',
    'Ines Berg',
    ['person', 'customer'],
    'email: ines@brightlane.io\ngithub: ines-b\ncompany: Brightlane\nplan: team, 9 seats\nPrefers short answers; sends the weekly report to her accountant on Fridays.',
  ),
  note(
    'people/tom-hale.md',
    'Tom Hale',
    ['person', 'customer'],
    'email: tom@harbor-freight.co\ngithub: tom-h\ncompany: Harbor Freight Co\nplan: business, 12 seats\nHandles billing himself.',
  ),
  note(
    'people/priya-shah.md',
    'Priya Shah',
    ['person', 'customer'],
    'email: priya@lumen-analytics.com\ngithub: priya-s\ncompany: Lumen Analytics\nplan: trial until 2026-12-02\nSecurity team decides; SSO is a blocker.',
  ),
  note(
    'people/marco-testa.md',
    'Marco Testa',
    ['person', 'customer'],
    'email: marco@tessera.design\ngithub: marco-t\ncompany: Tessera Design\nplan: solo',
  ),
  note(
    'people/jonas-quast.md',
    'Jonas Quast',
    ['person', 'customer'],
    'email: jonas@quay-logistics.de\ngithub: jonas-q\ncompany: Quay Logistics\nplan: business, 30 seats\nRuns nightly bulk imports.',
  ),
  note('people/lea-kim.md', 'Lea Kim', ['person', 'team'], 'github: lea-k\nrole: contractor, mail and search'),
  note(
    'meetings/2026-11-20-planning.md',
    'Planning 20 November',
    ['meeting'],
    'Attendees: Sam, Lea, Omar\n\n- [x] Ship IMAP IDLE retry (Lea)\n- [ ] Review trigram search PR (Sam)\n- [ ] Write rate limit docs (Sam)\n- [ ] Decide annual billing (Sam)\nNext: 27 November.',
  ),
  note(
    'meetings/2026-11-13-planning.md',
    'Planning 13 November',
    ['meeting'],
    'Attendees: Sam, Lea\n\n- [x] Calendar sync for recurring events (Sam)\n- [ ] Flaky DST test (Lea)\n- [x] Dependabot grouping (Omar)',
  ),
  note(
    'meetings/2026-11-24-customer-call-lumen.md',
    'Call with Lumen Analytics',
    ['meeting', 'customer'],
    'Priya, Sam\n\n- [ ] Send SSO roadmap date to Priya (Sam)\n- [ ] Share the audit log export design (Sam)',
  ),
  note(
    'projects/roadmap.md',
    'Roadmap Q1 2027',
    ['project'],
    'SSO (Okta, OIDC first): January. Audit log export: February. Annual billing: undecided.',
  ),
];

/** The state the tools read and change; a fresh copy per run so the two modes start equal. */
export interface World {
  mails: Mail[];
  pullRequests: PullRequest[];
  issues: Issue[];
  notes: Note[];
  /** Replies drafted (never sent), in the order written. */
  drafts: { mailId: string; to: string; subject: string; body: string }[];
}

export function createWorld(): World {
  return structuredClone({ mails: [...inbox, ...sent], pullRequests, issues, notes, drafts: [] });
}
