import { type DueWindow, dueStanding, dueWindows, type Fact, type OwnerTask, tasksDue } from '@assistant/memory';
import type { HumanLog } from '@assistant/notes';
import * as z from 'zod';
import {
  checkContactSlug,
  contactDetail,
  contactNamed,
  duePattern,
  normaliseAbout,
  ownerTaskNamed,
} from '../memory/owner-memory.ts';
import type { OwnerMemory } from '../memory/server-memory.ts';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';

export interface MemoryRoutesOptions {
  memory: OwnerMemory;
  /** The owner's time zone (`owner.timezone`): what "today" is for `?due=`. */
  timeZone: string;
  /** The human log: merges, unmerges and the owner's tasks added or changed leave a line. @default none */
  humanLog?: Pick<HumanLog, 'write'>;
  /** @default Date.now */
  now?: () => number;
}

const slug = z.string().regex(/^[a-z0-9][a-z0-9-]{0,99}$/, {
  error: 'expected a contact slug (lower-case letters, digits and -, e.g. alice-martin)',
});
const taskId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/, { error: 'expected a task id such as t-20261201-ab12' });
const due = z.string().regex(duePattern, {
  error: 'expected a day (2026-12-01) or an ISO instant with a zone (2026-12-01T09:00:00Z)',
});
const folder = z.string().regex(/^[A-Za-z0-9_-]{1,64}(\/[A-Za-z0-9_-]{1,64}){0,4}$/, {
  error: 'expected a folder of the notes such as facts or email/personal',
});
/** One subject or several: `about: "alice-martin"` or `about: ["contact:alice-martin", "topic:dentist"]`. */
const about = z
  .union([z.string().min(1).max(200), z.array(z.string().min(1).max(200)).max(20)])
  .transform((value) => (typeof value === 'string' ? [value] : value));

const problemSchema = z.object({ path: z.string(), message: z.string() });
const contactSchema = z.looseObject({ path: z.string(), slug: z.string(), name: z.string() });
const factSchema = z.looseObject({
  path: z.string(),
  id: z.string(),
  statement: z.string(),
  superseded_by: z.string().optional(),
});
const taskSchema = z.looseObject({ path: z.string(), id: z.string(), title: z.string(), status: z.string() });

const searchQuery = z.strictObject({
  q: z.string().min(1, { error: 'expected the text to look for' }).max(1_000),
  mode: z.enum(['lexical', 'hybrid']).default('hybrid'),
  folder: folder.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(10),
});

const tasksQuery = z.strictObject({
  due: z.enum(dueWindows).default('all'),
  status: z.enum(['open', 'done', 'dropped', 'any']).default('open'),
});

function factJson(fact: Fact, supersededBy: Map<string, string>) {
  const newer = supersededBy.get(fact.id);
  return newer === undefined ? fact : { ...fact, superseded_by: newer };
}

/**
 * `/api/memory`: the owner's memory (docs/memory.md): search by meaning over every note, contacts (merge and unmerge
 * are the owner's: the token is the owner), facts (what the token adds is the owner's, trust `owner`), and the owner's
 * own tasks (`tasks/*.md`, not the queue). A note that does not parse is listed in `problems`, never rewritten.
 */
export function registerMemoryRoutes(app: AssistantServer, routes: RouteTable, options: MemoryRoutesOptions): void {
  const { memory } = options;
  const now = options.now ?? Date.now;
  const log = async (message: string, link: string) => {
    await options.humanLog?.write({ source: 'api', message, link });
  };
  const taskJson = (task: OwnerTask) => ({
    ...task,
    standing: dueStanding(task, { nowMs: now(), timeZone: options.timeZone }),
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/memory/search',
    tag: 'memory',
    summary: 'Find notes by meaning and words',
    description:
      '`mode: hybrid` (the default) fuses BM25 over words, vectors from the embedder and contacts named in both; it answers `mode: lexical` with `degraded` (why) when vectors are not available (no endpoint, the endpoint down, vectors still being made). `folder` keeps only notes under it (`facts`, `contacts`). Each hit has its fused `score` and the `parts` it was fused from; a fact another fact supersedes has `superseded: true` and ranks below its replacement.',
    query: searchQuery,
    responses: {
      200: {
        description: '`mode`, `degraded` and `hits`',
        schema: z.object({
          mode: z.enum(['lexical', 'hybrid']),
          degraded: z.string().optional(),
          hits: z.array(z.looseObject({ path: z.string(), score: z.number(), title: z.string() })),
        }),
      },
      400: { description: 'BAD_REQUEST: no `q`, an unknown mode or a bad folder', schema: errorBodySchema },
    },
    handler: async ({ query }) => {
      const index = await memory.index();
      return index.search({
        query: query.q,
        mode: query.mode,
        limit: query.limit,
        ...(query.folder === undefined ? {} : { folders: [query.folder] }),
      });
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/memory/contacts',
    tag: 'memory',
    summary: 'Every contact',
    description:
      '`contacts`: every `contacts/<slug>.md` as written (a contact merged into another has `merged_into`); `problems`: contact notes that do not parse (skipped, never rewritten).',
    responses: {
      200: {
        description: '`contacts` and `problems`',
        schema: z.object({ contacts: z.array(contactSchema), problems: z.array(problemSchema) }),
      },
    },
    handler: async () => memory.stores.contacts.list(),
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/memory/contacts/:slug',
    tag: 'memory',
    summary: 'One contact with what memory knows about them',
    description:
      '`contact` as written; `primary`: the contact it was merged into; `merged_from`: the contacts merged into it; `facts` about it (or one merged into it), newest first, superseded ones with `superseded_by`; `items`: note paths of the items they appear in.',
    params: z.strictObject({ slug }),
    responses: {
      200: {
        description: 'the contact',
        schema: z.object({
          contact: contactSchema,
          primary: contactSchema.optional(),
          merged_from: z.array(contactSchema),
          facts: z.array(factSchema),
          items: z.array(z.string()),
          problems: z.array(problemSchema),
        }),
      },
      400: { description: 'BAD_REQUEST: not a contact slug', schema: errorBodySchema },
      404: { description: 'NOT_FOUND: no such contact', schema: errorBodySchema },
    },
    handler: async ({ params }) => {
      const detail = await contactDetail({ stores: memory.stores, slug: params.slug });
      return {
        contact: detail.contact,
        ...(detail.primary === undefined ? {} : { primary: detail.primary }),
        merged_from: detail.mergedFrom,
        facts: detail.facts.map((view) =>
          view.supersededBy === undefined ? view.fact : { ...view.fact, superseded_by: view.supersededBy },
        ),
        items: detail.items,
        problems: detail.problems,
      };
    },
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/memory/contacts/merge',
    tag: 'memory',
    summary: 'Merge one contact into another (reversible)',
    description:
      '`from` gets `merged_into: <into>` and `into` gets `from` in `merged_from`; both notes are otherwise untouched, so both histories stay and `POST /api/memory/contacts/<from>/unmerge` restores them exactly.',
    body: z.strictObject({ into: slug, from: slug }),
    responses: {
      200: {
        description: 'both contacts after the merge',
        schema: z.object({ into: contactSchema, from: contactSchema }),
      },
      400: { description: 'BAD_REQUEST: a bad slug, or a contact merged into itself', schema: errorBodySchema },
      404: { description: 'NOT_FOUND: no such contact', schema: errorBodySchema },
    },
    handler: async ({ body }) => {
      await Promise.all([contactNamed(memory.stores, body.into), contactNamed(memory.stores, body.from)]);
      const merged = await memory.stores.contacts.merge({ into: body.into, from: body.from });
      await Promise.all([memory.refresh(merged.into.path), memory.refresh(merged.from.path)]);
      await log(`merged contact ${merged.from.slug} into ${merged.into.slug}`, merged.into.path);
      return { into: merged.into, from: merged.from };
    },
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/memory/contacts/:slug/unmerge',
    tag: 'memory',
    summary: 'Undo a merge',
    description:
      "Removes exactly the links a merge added (`merged_into` of `slug`, and `slug` from the other contact's `merged_from`), so both notes are as they were before the merge.",
    params: z.strictObject({ slug }),
    responses: {
      200: { description: 'the contact, split again', schema: z.object({ contact: contactSchema }) },
      400: { description: 'BAD_REQUEST: a bad slug, or a contact that is not merged', schema: errorBodySchema },
      404: { description: 'NOT_FOUND: no such contact', schema: errorBodySchema },
    },
    handler: async ({ params }) => {
      const before = await contactNamed(memory.stores, checkContactSlug(params.slug));
      await memory.stores.contacts.unmerge({ slug: params.slug });
      const contact = await contactNamed(memory.stores, params.slug);
      await memory.refresh(contact.path);
      if (before.merged_into !== undefined) await memory.refresh(`contacts/${before.merged_into}.md`);
      await log(
        `unmerged contact ${params.slug}${before.merged_into ? ` from ${before.merged_into}` : ''}`,
        contact.path,
      );
      return { contact };
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/memory/facts',
    tag: 'memory',
    summary: 'Facts, superseded ones included',
    description:
      '`facts`: every fact (or those `about` a contact `contact:<slug>` or topic `topic:<word>`), superseded ones included with `superseded_by` naming their replacement: the system never deletes a fact. `problems`: fact notes that do not parse.',
    query: z.strictObject({ about: z.string().min(1).max(200).optional() }),
    responses: {
      200: {
        description: '`facts` and `problems`',
        schema: z.object({ facts: z.array(factSchema), problems: z.array(problemSchema) }),
      },
    },
    handler: async ({ query }) => {
      const subject = query.about === undefined ? undefined : (await normaliseAbout(memory.stores, [query.about]))[0];
      const [{ facts, problems }, supersededBy] = await Promise.all([
        memory.stores.facts.list({ includeSuperseded: true, ...(subject === undefined ? {} : { about: subject }) }),
        memory.stores.facts.supersededBy(),
      ]);
      const matching = subject === undefined ? facts : facts.filter((fact) => fact.about.includes(subject));
      return { facts: matching.map((fact) => factJson(fact, supersededBy)), problems };
    },
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/memory/facts',
    tag: 'memory',
    summary: "Add the owner's fact",
    description:
      '`statement` and what it is `about` (a contact slug, `contact:<slug>`, `topic:<word>` or a word, or a list of them). Written with trust `owner` and source `owner`: the token is the owner, and no fact extracted from a mail or a chat can supersede it.',
    body: z.strictObject({
      statement: z.string().trim().min(1, { error: 'expected the statement' }).max(2_000),
      about,
      supersedes: z
        .array(z.string().regex(/^f-[A-Za-z0-9_-]{1,100}$/))
        .max(20)
        .optional(),
    }),
    responses: {
      201: { description: 'the fact', schema: z.object({ fact: factSchema }) },
      400: { description: 'BAD_REQUEST: no statement, or a bad `about`', schema: errorBodySchema },
    },
    handler: async ({ body, reply }) => {
      const fact = await memory.stores.facts.add({
        statement: body.statement,
        about: await normaliseAbout(memory.stores, body.about),
        source: 'owner',
        trust: 'owner',
        ...(body.supersedes === undefined ? {} : { supersedes: body.supersedes }),
      });
      await memory.refresh(fact.path);
      return reply.code(201).send({ fact });
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/memory/tasks',
    tag: 'memory',
    summary: "The owner's tasks",
    description:
      "The owner's follow-ups and to-dos (`tasks/*.md`, not queue tasks), soonest due first. `due`: `overdue` (past), `today` (due by the end of today in `owner.timezone`, overdue included), `week` (by the end of the sixth day from today), `all` (the default, undated ones too). `status`: `open` (the default), `done`, `dropped` or `any`. Each task has `standing`: overdue, today, week, later or none.",
    query: tasksQuery,
    responses: {
      200: {
        description: '`tasks` and `problems`',
        schema: z.object({ tasks: z.array(taskSchema), problems: z.array(problemSchema) }),
      },
      400: { description: 'BAD_REQUEST: an unknown `due` or `status`', schema: errorBodySchema },
    },
    handler: async ({ query }) => {
      const { tasks, problems } = await memory.stores.tasks.list(
        query.status === 'any' ? {} : { status: query.status },
      );
      const listed = tasksDue({ tasks, due: query.due as DueWindow, nowMs: now(), timeZone: options.timeZone });
      return { tasks: listed.map(taskJson), problems };
    },
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/memory/tasks',
    tag: 'memory',
    summary: "Add one of the owner's tasks",
    description:
      '`title`, optional `due` (a day `2026-12-01` or an ISO instant), `about` (as for facts) and `body`. Written as created by the owner.',
    body: z.strictObject({
      title: z.string().trim().min(1, { error: 'expected the title' }).max(300),
      due: due.optional(),
      about: about.optional(),
      body: z.string().max(20_000).optional(),
    }),
    responses: {
      201: { description: 'the task', schema: z.object({ task: taskSchema }) },
      400: { description: 'BAD_REQUEST: no title, or a bad due date', schema: errorBodySchema },
    },
    handler: async ({ body, reply }) => {
      const task = await memory.stores.tasks.add({
        title: body.title,
        createdBy: 'owner',
        source: 'owner',
        ...(body.due === undefined ? {} : { due: body.due }),
        ...(body.about === undefined ? {} : { about: await normaliseAbout(memory.stores, body.about) }),
        ...(body.body === undefined ? {} : { body: body.body }),
      });
      await memory.refresh(task.path);
      await log(`added task of yours: ${task.title.slice(0, 120)}${task.due ? ` (due ${task.due})` : ''}`, task.path);
      return reply.code(201).send({ task: taskJson(task) });
    },
  });

  routes.add(app, {
    method: 'PATCH',
    url: '/api/memory/tasks/:id',
    tag: 'memory',
    summary: "Mark one of the owner's tasks done, dropped or open, or move its due date",
    description:
      '`status` and/or `due` (`null` removes the due date); the rest of the note (its body, hand edits) is kept as written.',
    params: z.strictObject({ id: taskId }),
    body: z
      .strictObject({ status: z.enum(['open', 'done', 'dropped']).optional(), due: due.nullable().optional() })
      .refine((value) => value.status !== undefined || value.due !== undefined, {
        error: 'expected `status` (open, done, dropped) or `due`',
      }),
    responses: {
      200: { description: 'the task', schema: z.object({ task: taskSchema }) },
      400: {
        description: 'BAD_REQUEST: nothing to change, an unknown status, a bad due date',
        schema: errorBodySchema,
      },
      404: { description: 'NOT_FOUND: no such task', schema: errorBodySchema },
    },
    handler: async ({ params, body }) => {
      await ownerTaskNamed(memory.stores, params.id);
      await memory.stores.tasks.update(params.id, {
        ...(body.status === undefined ? {} : { status: body.status }),
        ...(body.due === undefined ? {} : { due: body.due }),
      });
      const task = await ownerTaskNamed(memory.stores, params.id);
      await memory.refresh(task.path);
      const changes = [
        ...(body.status === undefined ? [] : [`status ${body.status}`]),
        ...(body.due === undefined ? [] : [body.due === null ? 'no due date' : `due ${body.due}`]),
      ];
      await log(`task of yours ${changes.join(', ')}: ${task.title.slice(0, 120)}`, task.path);
      return { task: taskJson(task) };
    },
  });
}
