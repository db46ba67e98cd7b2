import { createHash } from 'node:crypto';
import { renderTemplate } from '@assistant/actions';
import {
  type Condition,
  type ConditionNode,
  compileConditionTree,
  type FieldType,
  type Provenance,
} from '@assistant/automations';
import { nearest, recordSchemas, Secret, Yolo } from '@assistant/config';
import type { EventTypeDefinition } from '@assistant/events';
import type * as z from 'zod';
import type { HookCatalog } from './hook-catalog.ts';
import { type ActionWritten, hookSchema, readActions, type WhenConditions } from './hook-schema.ts';
import type { CompiledHook, HookAction } from './hook-types.ts';
import { atProblem } from './notify-at.ts';

/**
 * The event types hooks may name: the ledger's registry (built-in types plus those the manifests declare). Only
 * `get` is needed; `names` (or `list`) feeds "did you mean" hints.
 */
export interface HookEventRegistry {
  get(type: string): Pick<EventTypeDefinition, 'name' | 'fields'> | undefined;
  names?(): readonly string[];
  list?(): readonly Pick<EventTypeDefinition, 'name'>[];
}

/** A problem in one hook, at a key path from the hook's own root (`['then', 1, 'notify']`, `['when', 'frm']`). */
export interface HookCompileProblem {
  path: (string | number)[];
  message: string;
  hint?: string;
  /** The problem is the key's name, not its value. */
  at?: 'key';
}

export interface CompileHookOptions {
  /** The hook as read from YAML (with `!yolo` markers), a mapping. */
  source: unknown;
  name: string;
  file: string;
  line: number;
  registry: HookEventRegistry;
  catalog: HookCatalog;
}

export interface CompileHookResult {
  /** Undefined when there is any problem: a hook with a problem never loads, so it never half-runs. */
  hook?: CompiledHook;
  problems: HookCompileProblem[];
  /** Shape problems, as zod reports them (paths from the hook's root), for the config package's located messages. */
  issues: z.core.$ZodIssue[];
}

/**
 * Checks and compiles one hook: its shape, its event type and fields against the registry, `on.filter` and `when:`
 * in the automations' condition language, its actions against the catalog, its provenance, and the rule that an
 * irreversible action of a hook whose decision is not the owner's deterministic rule (an `ask:`, or facts an outsider
 * wrote) needs `approval: required` or `!yolo`.
 */
export function compileHook(options: CompileHookOptions): CompileHookResult {
  const problems: HookCompileProblem[] = [];
  const parsed = hookSchema.safeParse(options.source, { error: recordSchemas });
  const read = readActions(
    options.source !== null && typeof options.source === 'object'
      ? (options.source as { then?: unknown }).then
      : undefined,
  );
  const issues = [
    ...(parsed.success ? [] : parsed.error.issues.filter((issue) => issue.path[0] !== 'then')),
    ...read.issues,
  ];
  if (!parsed.success || read.issues.length > 0) return { problems, issues };
  const written = parsed.data;

  const problem = (entry: HookCompileProblem) => problems.push(entry);
  const eventType = typeof written.on === 'string' ? written.on : written.on.type;
  const onPath = typeof written.on === 'string' ? ['on'] : ['on', 'type'];
  const definition = options.registry.get(eventType);
  if (!definition) {
    const known = registryNames(options.registry);
    const typo = nearest(eventType, known);
    problem({
      path: onPath,
      message: `\`${eventType}\` is not an event type`,
      hint: typo
        ? `did you mean \`${typo}\`?`
        : known.length > 0
          ? `event types: ${known.join(', ')}`
          : 'no event types are registered',
    });
  }
  const fields = definition?.fields ?? {};
  const fieldTypes: Record<string, FieldType> = Object.fromEntries(
    Object.entries(fields).map(([name, field]) => [name, field.type]),
  );
  const unknownKey = (key: string) => {
    const typo = nearest(key.replace(/^field\./, ''), Object.keys(fieldTypes));
    return {
      message: `\`${key}\` is not a field of \`${eventType}\``,
      hint: typo
        ? `did you mean \`${typo}\`?`
        : Object.keys(fieldTypes).length > 0
          ? `its fields: ${Object.keys(fieldTypes).join(', ')}`
          : `\`${eventType}\` has no fields to test`,
    };
  };

  // One list of tests for the filter and `when:`: the filter is part of the fast path, and provenance reads both.
  const conditions: Condition[] = [];
  const trees: ConditionNode[] = [];
  const compileTree = (when: WhenConditions | undefined, path: (string | number)[]) => {
    if (when === undefined || !definition) return;
    const compiled = compileConditionTree({
      when,
      path,
      classifications: {},
      fields: fieldTypes,
      conditions,
      unknownKey,
    });
    for (const found of compiled.problems) problem(found);
    trees.push(compiled.when);
  };
  if (typeof written.on !== 'string') compileTree(written.on.filter, ['on', 'filter']);
  compileTree(written.when, ['when']);

  if (written.count?.per !== undefined && definition && !Object.hasOwn(fields, written.count.per)) {
    problem({ path: ['count', 'per'], ...unknownKey(written.count.per) });
  }

  const llmProblem = (profile: string | undefined, path: (string | number)[]) => {
    const name = profile ?? 'default';
    if (options.catalog.llms.includes(name)) return;
    problem({
      path,
      message:
        profile === undefined
          ? 'this needs an LLM, and there is no `llms.default` profile'
          : `LLM profile \`${profile}\` is not defined under \`llms:\``,
      hint:
        options.catalog.llms.length > 0
          ? `profiles: ${options.catalog.llms.join(', ')}${profile === undefined ? ' (name one with `llm:`)' : ''}`
          : 'add a profile under `llms:` in config.yaml',
    });
  };
  const ask =
    written.ask === undefined
      ? undefined
      : typeof written.ask === 'string'
        ? { question: written.ask }
        : { question: written.ask.question, ...(written.ask.llm === undefined ? {} : { llm: written.ask.llm }) };
  if (ask) llmProblem(ask.llm, typeof written.ask === 'string' || ask.llm === undefined ? ['ask'] : ['ask', 'llm']);

  const actions: { action: HookAction; path: (string | number)[] }[] = [];
  for (const entry of read.actions) {
    const resolved = resolveAction(entry, options.catalog, llmProblem);
    if ('problem' in resolved) {
      problem({
        path: resolved.at ? [...entry.path, ...resolved.at] : [...entry.path, entry.kind],
        message: resolved.problem,
        ...(resolved.hint ? { hint: resolved.hint } : {}),
      });
      continue;
    }
    for (const [text, at] of templatesOf(resolved)) {
      const templateProblem = checkTemplate(text, fields);
      if (templateProblem)
        problem({
          path: [...entry.path, ...at],
          message: templateProblem.message,
          ...(templateProblem.hint ? { hint: templateProblem.hint } : {}),
        });
    }
    actions.push({ action: resolved, path: entry.path });
  }

  const untrusted = [
    ...new Set(
      conditions
        .filter(
          (condition) =>
            condition.subject.kind === 'field' &&
            !(Object.hasOwn(fields, condition.subject.name) && fields[condition.subject.name]?.trusted === true),
        )
        .map((condition) => condition.subject.name),
    ),
  ];
  const irreversible = actions.some(({ action }) => action.tier === 'irreversible');
  const provenance = hookProvenance({ ask: ask !== undefined, conditions: conditions.length, untrusted, irreversible });
  const approval = written.approval === 'required';
  for (const { action, path } of actions) {
    if (action.tier !== 'irreversible' || provenance === 'rule' || action.yolo || approval) continue;
    problem({
      path,
      message: ask
        ? `${describeAction(action)} cannot be undone, and this hook decides by asking an LLM (\`ask:\`, ${provenance})`
        : `${describeAction(action)} cannot be undone, and this hook tests facts an outsider controls (${untrusted.map((name) => `\`${name}\``).join(', ')}), so it is not deterministic (${provenance})`,
      hint: 'add `approval: required` to the hook so a person approves each firing, or tag the action `!yolo` to accept the risk',
    });
  }

  if (problems.length > 0) return { problems, issues };
  const when: ConditionNode = trees.length === 1 && trees[0] ? trees[0] : { kind: 'all', children: trees };
  const hook: CompiledHook = {
    name: options.name,
    file: options.file,
    line: options.line,
    version: hookVersion(options.name, options.source),
    ...(written.description === undefined ? {} : { description: written.description }),
    enabled: written.enabled !== false,
    on: eventType,
    conditions,
    when,
    trustedFields: Object.entries(fields)
      .filter(([, field]) => field.trusted)
      .map(([name]) => name),
    ...(ask ? { ask } : {}),
    ...(written.count
      ? {
          count: {
            atLeast: written.count.at_least,
            withinMs: written.count.within,
            ...(written.count.per === undefined ? {} : { per: written.count.per }),
          },
        }
      : {}),
    once: written.once === true,
    ...(written.debounce === undefined ? {} : { debounceMs: written.debounce }),
    ...(written.for === undefined ? {} : { forMs: written.for }),
    catchUp: written.catch_up ?? 'once',
    provenance,
    actions: actions.map(({ action }) => action),
    approval,
  };
  return { hook, problems, issues };
}

/**
 * Where a hook's decision comes from, by the automations' rules: `ask:` makes it the LLM's (`llm`, or `hybrid` with
 * deterministic conditions beside it); without `ask:`, testing fields an outsider wrote (a mail's sender, a comment)
 * makes it `hybrid` when the hook holds an irreversible action, and otherwise it is the owner's `rule`.
 */
export function hookProvenance(facts: {
  ask: boolean;
  conditions: number;
  untrusted: readonly string[];
  irreversible: boolean;
}): Provenance {
  if (facts.ask) return facts.conditions > 0 ? 'hybrid' : 'llm';
  return facts.untrusted.length > 0 && facts.irreversible ? 'hybrid' : 'rule';
}

type Resolved = HookAction | { problem: string; hint?: string; at?: (string | number)[] };

function resolveAction(
  entry: ActionWritten,
  catalog: HookCatalog,
  llmProblem: (profile: string | undefined, path: (string | number)[]) => void,
): Resolved {
  const { value, yolo } = entry;
  const base = { yolo };
  switch (entry.kind) {
    case 'enqueue': {
      const spec = value.enqueue as { type: string; payload?: Record<string, unknown>; delay?: number };
      const known = Object.hasOwn(catalog.taskTypes, spec.type) ? catalog.taskTypes[spec.type] : undefined;
      if (!known) {
        const typo = nearest(spec.type, Object.keys(catalog.taskTypes));
        return {
          problem: `no handler runs task type \`${spec.type}\``,
          hint: typo
            ? `did you mean \`${typo}\`?`
            : 'task types come from the integrations’ manifests (`tasks:` and platform stages; docs/integrations.md)',
          at: ['enqueue', 'type'],
        };
      }
      return {
        kind: 'enqueue',
        type: spec.type,
        ...(spec.payload === undefined ? {} : { payload: spec.payload }),
        ...(spec.delay === undefined ? {} : { delayMs: spec.delay }),
        // A task whose handler declares no tier might do anything: treated as what cannot be undone.
        tier: known.tier ?? 'irreversible',
        ...base,
      };
    }
    case 'service': {
      const written = value.service as
        | string
        | {
            call: string;
            inputs?: Record<string, string | number | boolean>;
            human_log?: string;
            on_result?: Record<string, unknown>[];
          };
      const call = typeof written === 'string' ? written : written.call;
      const inputs = {
        ...(typeof written === 'string' ? {} : (written.inputs ?? {})),
        ...((value.inputs as Record<string, string | number | boolean> | undefined) ?? {}),
      };
      const service = catalog.service(call);
      if ('problem' in service)
        return { problem: service.problem, at: typeof written === 'string' ? ['service'] : ['service', 'call'] };
      return {
        kind: 'service',
        name: service.call,
        ...(Object.keys(inputs).length === 0 ? {} : { inputs }),
        ...(typeof written !== 'string' && written.human_log !== undefined ? { humanLog: written.human_log } : {}),
        ...(typeof written !== 'string' && written.on_result !== undefined ? { onResult: written.on_result } : {}),
        tier: service.reversible ? 'soft' : 'irreversible',
        ...base,
      };
    }
    case 'script': {
      const name = value.script as string;
      const script = Object.hasOwn(catalog.scripts, name) ? catalog.scripts[name] : undefined;
      if (!script) {
        const typo = nearest(name, Object.keys(catalog.scripts));
        return {
          problem: `script \`${name}\` is not defined under \`scripts:\``,
          ...(typo ? { hint: `did you mean \`${typo}\`?` } : {}),
        };
      }
      const inputs = value.inputs as Record<string, string | number | boolean> | undefined;
      return {
        kind: 'script',
        name,
        ...(inputs === undefined ? {} : { inputs }),
        tier: script.reversible ? 'soft' : 'irreversible',
        ...base,
      };
    }
    case 'agent': {
      const written = value.agent as string | { prompt: string; llm?: string };
      const prompt = typeof written === 'string' ? written : written.prompt;
      const llm = typeof written === 'string' ? undefined : written.llm;
      llmProblem(llm, [...entry.path, 'agent', ...(llm === undefined ? [] : ['llm'])]);
      // The loop's own tool calls pass the tool gate (tiers, `tools.approve`): starting it is soft.
      return { kind: 'agent', prompt, ...(llm === undefined ? {} : { llm }), tier: 'soft', ...base };
    }
    case 'chat': {
      const written = value.chat as string | { text: string; conversation?: string };
      return typeof written === 'string'
        ? { kind: 'chat', text: written, tier: 'soft', ...base }
        : {
            kind: 'chat',
            text: written.text,
            ...(written.conversation === undefined ? {} : { conversation: written.conversation }),
            tier: 'soft',
            ...base,
          };
    }
    case 'notify': {
      const written = value.notify as string | { text: string; after?: number; at?: string };
      const text = typeof written === 'string' ? written : written.text;
      const after = (typeof written === 'string' ? undefined : written.after) ?? (value.after as number | undefined);
      const at = (typeof written === 'string' ? undefined : written.at) ?? (value.at as string | undefined);
      if (after !== undefined && at !== undefined) return { problem: 'a notification has `after:` or `at:`, not both' };
      if (at !== undefined) {
        const found = atProblem(at);
        if (found) return { problem: found, at: typeof written === 'string' ? ['at'] : ['notify', 'at'] };
      }
      return {
        kind: 'notify',
        text,
        ...(after === undefined ? {} : { delayMs: after }),
        ...(at === undefined ? {} : { at }),
        tier: 'soft',
        ...base,
      };
    }
    case 'pause': {
      const written = value.pause as string | { integration: string; reason?: string };
      const integration = typeof written === 'string' ? written : written.integration;
      if (!catalog.instances.includes(integration)) {
        const typo = nearest(integration, catalog.instances);
        return {
          problem: `there is no integration instance \`${integration}\` to pause`,
          hint: typo ? `did you mean \`${typo}\`?` : `instances: ${catalog.instances.join(', ') || 'none'}`,
          at: typeof written === 'string' ? ['pause'] : ['pause', 'integration'],
        };
      }
      return {
        kind: 'pause',
        integration,
        ...(typeof written !== 'string' && written.reason !== undefined ? { reason: written.reason } : {}),
        tier: 'soft',
        ...base,
      };
    }
  }
}

/** The texts of an action that are templates, with where each is written inside the action. */
function templatesOf(action: HookAction): [string, (string | number)[]][] {
  switch (action.kind) {
    case 'enqueue':
      return stringsOf(action.payload, ['enqueue', 'payload']);
    case 'service':
    case 'script':
      return Object.entries(action.inputs ?? {}).flatMap(([name, value]) =>
        typeof value === 'string' ? [[value, [action.kind, 'inputs', name]] as [string, (string | number)[]]] : [],
      );
    case 'agent':
      return [[action.prompt, ['agent']]];
    case 'chat':
      return [[action.text, ['chat']]];
    case 'notify':
      return [
        [action.text, ['notify']],
        ...(action.at === undefined ? [] : [[action.at, ['at']] as [string, (string | number)[]]]),
      ];
    case 'pause':
      return action.reason === undefined ? [] : [[action.reason, ['pause', 'reason']]];
  }
}

function stringsOf(value: unknown, path: (string | number)[]): [string, (string | number)[]][] {
  if (typeof value === 'string') return [[value, path]];
  if (Array.isArray(value)) return value.flatMap((item, index) => stringsOf(item, [...path, index]));
  if (value !== null && typeof value === 'object')
    return Object.entries(value).flatMap(([key, item]) => stringsOf(item, [...path, key]));
  return [];
}

const eventDataReference = /\bevent\.data\.([A-Za-z_][A-Za-z0-9_]*)/g;

/**
 * Whether a template renders (liquid syntax, known filters) and names only fields the event declares: a misspelt
 * `{{event.data.subjct}}` would render as nothing at every firing, so it is a problem at load instead.
 */
function checkTemplate(text: string, fields: Record<string, unknown>): { message: string; hint?: string } | undefined {
  if (!text.includes('{{') && !text.includes('{%')) return undefined;
  try {
    renderTemplate(text, { event: { data: {} }, hook: {} });
  } catch (error) {
    return {
      message: `the template does not render: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
    };
  }
  for (const match of text.matchAll(eventDataReference)) {
    const name = match[1] ?? '';
    if (Object.hasOwn(fields, name)) continue;
    const typo = nearest(name, Object.keys(fields));
    return {
      message: `\`event.data.${name}\` is not a field of this event`,
      hint: typo ? `did you mean \`event.data.${typo}\`?` : `its fields: ${Object.keys(fields).join(', ') || 'none'}`,
    };
  }
  return undefined;
}

/** `enqueue email.inbox.check`, `notify`, `service research.web.search`: how problems and summaries name an action. */
export function describeAction(action: HookAction): string {
  switch (action.kind) {
    case 'enqueue':
      return `\`enqueue ${action.type}\``;
    case 'service':
      return `\`service ${action.name}\``;
    case 'script':
      return `\`script ${action.name}\``;
    case 'pause':
      return `\`pause ${action.integration}\``;
    default:
      return `\`${action.kind}\``;
  }
}

function registryNames(registry: HookEventRegistry): string[] {
  if (registry.names) return [...registry.names()];
  if (registry.list) return registry.list().map((definition) => definition.name);
  return [];
}

/**
 * sha256 (first 16 hex) of the hook's canonical source: key order and formatting do not change it, any value or
 * `!yolo` tag does. The slow path's cache and the runner's firing records key on it.
 */
export function hookVersion(name: string, source: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(canonical({ name, source })))
    .digest('hex')
    .slice(0, 16);
}

function canonical(value: unknown): unknown {
  if (value instanceof Yolo) return { '!yolo': canonical(value.value) };
  if (value instanceof Secret) return { '!secret': value.name };
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}
