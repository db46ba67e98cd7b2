import { AssistantError } from '@assistant/errors';
import type { EventLedger, EventRecord } from '@assistant/events';
import {
  askHook,
  type CompiledHook,
  describeHook,
  dryRunHook,
  dryRunJson,
  eventForTest,
  fileAskCache,
  hookStateJson,
  readHookStates,
} from '@assistant/hooks';
import type { ChatModel } from '@assistant/llm';
import * as z from 'zod';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';

export interface HookRoutesOptions {
  /** The hooks as loaded at start (`loadRuntime`'s `hooks`): the worker runs them; the server shows them. */
  hooks: readonly CompiledHook[];
  events: EventLedger;
  /** Where the runner keeps its state (`data/hooks/`) and the ask cache. */
  dataDir: string;
  /** The model of an LLM profile, for a dry run with `ask: true`. */
  llm: (profile?: string) => ChatModel;
}

const hookParams = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/, { error: 'expected a hook name such as accountant' }),
});

const stateSchema = z.looseObject({
  name: z.string(),
  on: z.string(),
  enabled: z.boolean(),
  once: z.boolean(),
  fired_once: z.boolean(),
  last_fired_at: z.string().optional(),
  firings: z.int(),
  breaker: z.looseObject({ state: z.enum(['closed', 'open', 'half-open']), failures: z.int() }),
  timers: z.array(z.object({ key: z.string(), kind: z.string(), due_at: z.string() })),
  missed: z.int(),
});

/**
 * The event a dry run decides on: an id the ledger holds, or an event written out (`{type, data, ...}`) checked
 * against the ledger's registry (the CLI follows the same rules with a file in place of an object).
 */
async function testEventOf(options: { event: unknown; events: EventLedger }): Promise<EventRecord> {
  if (typeof options.event === 'string') {
    const stored = await options.events.get(options.event);
    if (!stored) {
      throw new AssistantError(
        'HOOK_TEST_EVENT_INVALID',
        `no event ${JSON.stringify(options.event)} in the ledger (data/events/)`,
        { hint: 'pass the id of a stored event (ev- and 20 hex digits), as `GET /api/events` lists them' },
      );
    }
    const { cursor: _cursor, ...event } = stored;
    return event;
  }
  return eventForTest({ input: options.event, registry: options.events.registry });
}

/** `/api/hooks`: each hook's state and definition, and a dry run against an event (docs/hooks.md). Read only. */
export function registerHookRoutes(app: AssistantServer, routes: RouteTable, options: HookRoutesOptions): void {
  const byName = new Map(options.hooks.map((hook) => [hook.name, hook]));
  const hookNamed = (name: string): CompiledHook => {
    const hook = byName.get(name);
    if (!hook) {
      const known = [...byName.keys()];
      throw new AssistantError(
        'NOT_FOUND',
        `no hook ${JSON.stringify(name)}; ${known.length === 0 ? 'no hooks are loaded' : `the hooks are ${known.join(', ')}`}`,
      );
    }
    return hook;
  };

  routes.add(app, {
    method: 'GET',
    url: '/api/hooks',
    tag: 'hooks',
    summary: "Every hook's state",
    description:
      'Per hook: enabled, one-shot and fired, last fired, firings, its breaker (closed, open, half-open), pending timers (debounce, for) and missed runs, read from `data/hooks/`.',
    responses: { 200: { description: '`hooks`: the states', schema: z.object({ hooks: z.array(stateSchema) }) } },
    handler: async () => {
      const states = await readHookStates({ dataDir: options.dataDir, hooks: options.hooks });
      return { hooks: states.map(hookStateJson) };
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/hooks/:name',
    tag: 'hooks',
    summary: 'One hook: its state and the hook as compiled',
    description:
      '`state` as in `GET /api/hooks`; `hook`: on, the fast-path conditions as text, `ask`, timers, provenance, and each action with its tier and whether it waits for approval; `file` and `line` say where it is written.',
    params: hookParams,
    responses: {
      200: {
        description: '`state` and `hook`',
        schema: z.object({ state: stateSchema, hook: z.looseObject({ name: z.string(), on: z.string() }) }),
      },
      400: { description: 'BAD_REQUEST: not a hook name', schema: errorBodySchema },
      404: { description: 'NOT_FOUND: no hook of that name', schema: errorBodySchema },
    },
    handler: async ({ params }) => {
      const hook = hookNamed(params.name);
      const [state] = await readHookStates({ dataDir: options.dataDir, hooks: [hook] });
      if (!state) throw new Error(`readHookStates returned no state for ${hook.name}`);
      return { state: hookStateJson(state), hook: describeHook(hook) };
    },
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/hooks/:name/test',
    tag: 'hooks',
    summary: 'A dry run of a hook against an event',
    description:
      "`event`: the id of a stored event, or an event written out (`{type, data, ...}`). The fast path with the value each check saw, the slow path (the model is called only with `ask: true`, through the hook's `ask.llm` profile; its verdict is cached as the runner's would be), and the actions it would take with whether each waits for approval. Nothing is enqueued, recorded or fired.",
    params: hookParams,
    body: z.strictObject({
      event: z.union([z.string().max(100), z.looseObject({ type: z.string() })]),
      ask: z.boolean().optional(),
    }),
    responses: {
      200: {
        description: '`fire`, `reason`, `fast_path`, `slow_path`, `actions`, `hook`, `event`',
        schema: z.looseObject({ fire: z.boolean(), reason: z.string() }),
      },
      400: { description: 'HOOK_TEST_EVENT_INVALID, or BAD_REQUEST', schema: errorBodySchema },
      404: { description: 'NOT_FOUND: no hook of that name', schema: errorBodySchema },
    },
    handler: async ({ params, body }) => {
      const hook = hookNamed(params.name);
      const event = await testEventOf({ event: body.event, events: options.events });
      const run = await dryRunHook({
        hook,
        event,
        ...(body.ask
          ? {
              ask: ({ hook: asked, event: about }) =>
                askHook({
                  hook: asked,
                  event: about,
                  model: options.llm(asked.ask?.llm),
                  cache: fileAskCache({ dataDir: options.dataDir }),
                }),
            }
          : {}),
      });
      return dryRunJson(run);
    },
  });
}
