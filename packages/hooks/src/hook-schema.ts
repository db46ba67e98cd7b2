import {
  durationSchema,
  identifierSchema,
  instanceNameSchema,
  jsonValueSchema,
  nearest,
  recordSchemas,
  serviceCallSchema,
  type WhenConditions,
  whenConditionsSchema,
  Yolo,
} from '@assistant/config';
import * as z from 'zod';

// The file format of a hook (docs/hooks.md). Every object is strict: an unknown or mis-indented key is a problem at
// its line, never silently dropped. Output keeps the owner's words (durations in milliseconds); the compiler then
// checks names against the event registry and the integrations.

/** A hook's name: its file name without `.yaml`, or `name:` in config.yaml's `hooks:`. It travels in file names. */
export const hookNamePattern = /^[a-z0-9][a-z0-9_-]*$/;
const hookNameSchema = z.string({ error: 'expected a name' }).regex(hookNamePattern, {
  error: (issue) =>
    `\`${String(issue.input)}\` is not a valid hook name: use a-z, 0-9, - and _, starting with a letter or digit`,
});

const eventTypeName = z
  .string({ error: 'expected an event type such as `mail.received`' })
  .regex(/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/, {
    error: (issue) => `\`${String(issue.input)}\` is not an event type: write a dotted name such as \`mail.received\``,
  });

const onSchema = z.union([
  eventTypeName,
  z.strictObject({ type: eventTypeName, filter: whenConditionsSchema.optional() }),
]);

const askSchema = z.union([
  z.string().min(1, { error: 'the question must not be empty' }),
  z.strictObject({ question: z.string().min(1), llm: identifierSchema.optional() }),
]);

const countSchema = z.strictObject({
  at_least: z.int().min(1, { error: '`at_least` is a whole number, 1 or more' }),
  within: durationSchema,
  per: identifierSchema.optional(),
});

const inputs = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));
const taskTypeName = z.string().regex(/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/, {
  error: 'expected a task type such as `email.inbox.check` or `system.echo`',
});

/** One key per action; the key says what it is. Listed for "did you mean" and the docs. */
export const actionKinds = ['enqueue', 'service', 'script', 'agent', 'chat', 'notify', 'pause'] as const;
type ActionKindWritten = (typeof actionKinds)[number];

/** The schema of each action by its key, as written (the `!yolo` tag already taken off). */
const actionSchemas: Record<ActionKindWritten, z.ZodType> = {
  enqueue: z.strictObject({
    enqueue: z.strictObject({
      type: taskTypeName,
      payload: z.record(z.string(), jsonValueSchema).optional(),
      delay: durationSchema.optional(),
    }),
  }),
  service: z.strictObject({
    service: z.union([
      serviceCallSchema,
      z.strictObject({
        call: serviceCallSchema,
        inputs: inputs.optional(),
        human_log: z.string().optional(),
        on_result: z.array(z.record(z.string(), jsonValueSchema)).optional(),
      }),
    ]),
    inputs: inputs.optional(),
  }),
  script: z.strictObject({ script: identifierSchema, inputs: inputs.optional() }),
  agent: z.strictObject({
    agent: z.union([
      z.string().min(1),
      z.strictObject({ prompt: z.string().min(1), llm: identifierSchema.optional() }),
    ]),
  }),
  chat: z.strictObject({
    chat: z.union([
      z.string().min(1),
      z.strictObject({ text: z.string().min(1), conversation: z.string().min(1).optional() }),
    ]),
  }),
  notify: z.strictObject({
    notify: z.union([
      z.string().min(1),
      z.strictObject({
        text: z.string().min(1),
        after: durationSchema.optional(),
        at: z.string().min(1).optional(),
      }),
    ]),
    after: durationSchema.optional(),
    at: z.string().min(1).optional(),
  }),
  pause: z.strictObject({
    pause: z.union([
      instanceNameSchema,
      z.strictObject({ integration: instanceNameSchema, reason: z.string().min(1).optional() }),
    ]),
  }),
};

/** A hook as written, checked for shape; `then` is checked action by action (see `readActions`). */
export const hookSchema = z.strictObject({
  name: hookNameSchema.optional(),
  description: z.string().optional(),
  enabled: z.boolean({ error: '`enabled` is true or false' }).optional(),
  on: onSchema,
  when: whenConditionsSchema.optional(),
  ask: askSchema.optional(),
  count: countSchema.optional(),
  once: z.boolean({ error: '`once` is true or false' }).optional(),
  debounce: durationSchema.optional(),
  for: durationSchema.optional(),
  catch_up: z.enum(['once', 'all', 'skip']).optional(),
  approval: z.literal('required', { error: 'the only value is `required`' }).optional(),
  // biome-ignore lint/suspicious/noThenProperty: `then:` is the key people write, as in automations.
  then: z.unknown(),
});

/** An action as written, parsed: its key, its parsed value, and whether it was tagged `!yolo`. */
export interface ActionWritten {
  kind: ActionKindWritten;
  value: Record<string, unknown>;
  yolo: boolean;
  /** Its path inside the hook: `['then', 1]`, or `['then']` for a single action. */
  path: (string | number)[];
}

/**
 * Reads `then:`: one action or a list, `!yolo` on an action or on the whole list. Each action is a mapping whose
 * first key names it; its issues carry paths from the hook's root.
 */
export function readActions(then: unknown): { actions: ActionWritten[]; issues: z.core.$ZodIssue[] } {
  const issues: z.core.$ZodIssue[] = [];
  const actions: ActionWritten[] = [];
  let listYolo = false;
  let list = then;
  if (list instanceof Yolo) {
    listYolo = Array.isArray(list.value);
    if (listYolo) list = list.value;
  }
  if (list === undefined || list === null) {
    issues.push(custom(['then'], 'missing required key `then`: a hook needs at least one action'));
    return { actions, issues };
  }
  const entries = Array.isArray(list) ? list : [list];
  if (entries.length === 0) issues.push(custom(['then'], '`then` needs at least one action'));
  entries.forEach((entry, index) => {
    const path: (string | number)[] = Array.isArray(list) ? ['then', index] : ['then'];
    let yolo = listYolo;
    let value = entry;
    if (value instanceof Yolo) {
      yolo = true;
      value = value.value;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      issues.push(
        custom(
          path,
          `expected an action, a mapping such as \`notify: text\` or \`enqueue: {type: …}\`, got ${JSON.stringify(value)}`,
          { hint: typeof value === 'string' ? hintFor(value) : `actions: ${actionKinds.join(', ')}` },
        ),
      );
      return;
    }
    const kind = actionKinds.find((candidate) => candidate in value);
    if (kind === undefined) {
      const first = Object.keys(value)[0] ?? '';
      issues.push({
        code: 'custom',
        input: value,
        path: [...path, first],
        message: `\`${first}\` is not an action: a hook's actions are ${actionKinds.join(', ')}`,
        params: { hint: hintFor(first) },
      } as z.core.$ZodIssue);
      return;
    }
    const parsed = actionSchemas[kind].safeParse(value, { error: recordSchemas });
    if (!parsed.success) {
      for (const issue of parsed.error.issues) issues.push({ ...issue, path: [...path, ...issue.path] });
      return;
    }
    actions.push({ kind, value: parsed.data as Record<string, unknown>, yolo, path });
  });
  return { actions, issues };
}

function hintFor(written: string): string {
  const typo = nearest(written, actionKinds);
  return typo ? `did you mean \`${typo}\`?` : `actions: ${actionKinds.join(', ')}`;
}

function custom(path: (string | number)[], message: string, params?: Record<string, unknown>): z.core.$ZodIssue {
  return { code: 'custom', input: undefined, path, message, ...(params ? { params } : {}) } as z.core.$ZodIssue;
}

export type { WhenConditions };
