// The memory evaluation set (tests/fixtures/memory-eval/): loaded and checked with zod, so a typo in a gold id or a
// missing field fails loudly with the file and the path instead of skewing the figures.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { z } from 'zod';

const evalSetFolder = fileURLToPath(new URL('../fixtures/memory-eval/', import.meta.url));

const personSchema = z.strictObject({
  name: z.string().min(1),
  email: z.string().optional(),
  handle: z.string().optional(),
  platform: z.string().optional(),
  organisation: z.string().optional(),
  /** The gold cluster (people.yaml). */
  gold: z.string().min(1),
});

const factSchema = z.strictObject({
  statement: z.string().min(1),
  about: z.array(z.string()),
  confidence: z.number().min(0).max(1),
  /** Gold ids of earlier facts this one replaces; the runner maps them to real fact ids. */
  supersedes_gold: z.array(z.string()).optional(),
  gold: z.string().min(1),
});

const followupSchema = z.strictObject({
  title: z.string().min(1),
  // YAML reads an unquoted 2026-12-07 as a string with the `yaml` package's core schema.
  due: z.string().optional(),
  about: z.string().optional(),
  gold: z.string().min(1),
});

const answerSchema = z.strictObject({
  people: z.array(personSchema),
  facts: z.array(factSchema),
  followups: z.array(followupSchema),
});

const common = {
  id: z.string().min(1),
  observedAt: z.string().datetime(),
  text: z.string().min(1),
  /** A (fooled) answer that tries to supersede an owner fact: consolidation must refuse it. */
  injection: z.boolean().optional(),
  answer: answerSchema,
};

const emailItemSchema = z.strictObject({
  ...common,
  kind: z.literal('email'),
  source: z.string().min(1),
  from: z.strictObject({ name: z.string(), email: z.string() }),
  subject: z.string(),
  /** The mail offers List-Unsubscribe (a newsletter): the note's `has_list_unsubscribe`. */
  list_unsubscribe: z.boolean().optional(),
});

const githubItemSchema = z.strictObject({
  ...common,
  kind: z.literal('github'),
  source: z.string().min(1),
  author: z.string(),
  title: z.string(),
});

const chatItemSchema = z.strictObject({
  ...common,
  kind: z.literal('chat'),
  conversation: z.string().min(1),
  messageId: z.string().min(1),
});

const itemSchema = z.discriminatedUnion('kind', [emailItemSchema, githubItemSchema, chatItemSchema]);

const ownerSchema = z.strictObject({
  /** config.yaml's `memory.owner_identities`: the owner's own addresses and `platform:handle`s. */
  identities: z.array(z.string()).default([]),
  facts: z.array(z.strictObject({ gold: z.string(), statement: z.string(), about: z.array(z.string()) })),
  contacts: z.array(
    z.strictObject({
      cluster: z.string(),
      name: z.string(),
      emails: z.array(z.string()).optional(),
      organisation: z.string().optional(),
    }),
  ),
});

const querySchema = z.strictObject({ query: z.string().min(1), gold: z.array(z.string()).min(1) });

export type EvalItem = z.infer<typeof itemSchema>;
type EvalQuery = z.infer<typeof querySchema>;
type EvalOwner = z.infer<typeof ownerSchema>;

export interface EvalSet {
  /** Every item, in time order (observedAt). */
  items: EvalItem[];
  owner: EvalOwner;
  /** Gold cluster id → who it is. */
  people: Record<string, string>;
  queries: EvalQuery[];
}

async function loadYaml<T>(file: string, schema: z.ZodType<T>): Promise<T> {
  const text = await readFile(path.join(evalSetFolder, file), 'utf8');
  const parsed = schema.safeParse(parse(text));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `Invalid ${file} at ${issue?.path.join('.') ?? '(root)'}: ${issue?.message ?? parsed.error.message}`,
    );
  }
  return parsed.data;
}

/** Loads the set and checks that every gold reference names something that exists. */
export async function loadEvalSet(): Promise<EvalSet> {
  const [mails, chats, github, owner, people, queries] = await Promise.all([
    loadYaml('items-mail.yaml', z.array(emailItemSchema)),
    loadYaml('items-chat.yaml', z.array(chatItemSchema)),
    loadYaml('items-github.yaml', z.array(githubItemSchema)),
    loadYaml('owner.yaml', ownerSchema),
    loadYaml('people.yaml', z.record(z.string(), z.string())),
    loadYaml('queries.yaml', z.array(querySchema)),
  ]);
  const items = [...mails, ...chats, ...github].sort((a, b) => a.observedAt.localeCompare(b.observedAt));
  const factIds = new Set(owner.facts.map((fact) => fact.gold));
  const problems: string[] = [];
  for (const item of items) {
    for (const person of item.answer.people) {
      if (!(person.gold in people)) problems.push(`${item.id}: person cluster ${person.gold} is not in people.yaml`);
    }
    for (const fact of item.answer.facts) {
      for (const old of fact.supersedes_gold ?? []) {
        // A fact may only supersede what exists when the item arrives: what the runner (and a model) can know.
        if (!factIds.has(old)) problems.push(`${item.id}: supersedes ${old}, which no earlier item or owner fact has`);
      }
      factIds.add(fact.gold);
    }
  }
  for (const contact of owner.contacts) {
    if (!(contact.cluster in people)) problems.push(`owner.yaml: contact cluster ${contact.cluster} is unknown`);
  }
  for (const query of queries) {
    for (const gold of query.gold) {
      const known = gold.startsWith('contact:') ? gold.slice('contact:'.length) in people : factIds.has(gold);
      if (!known) problems.push(`queries.yaml: "${query.query}" names ${gold}, which the set does not have`);
    }
  }
  if (problems.length > 0) throw new Error(`The memory evaluation set is inconsistent:\n${problems.join('\n')}`);
  return { items, owner, people, queries };
}
