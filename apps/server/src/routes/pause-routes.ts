import { AssistantError } from '@assistant/errors';
import { type IntegrationRegistry, resolvePauseTarget } from '@assistant/integration-host';
import {
  BrokenNoteError,
  describePause,
  type HumanLog,
  type NoteStore,
  PauseStore,
  pauseKinds,
} from '@assistant/notes';
import * as z from 'zod';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';

export interface PauseRoutesOptions {
  notes: NoteStore;
  humanLog: HumanLog;
  /** What can be paused; without it, pausing and resuming answer 503 (listing still works). */
  registry?: IntegrationRegistry | undefined;
}

const kind = z.enum(pauseKinds as ['instance', 'rule', 'schedule'], {
  error: 'expected `instance`, `rule` or `schedule`',
});
const target = {
  kind,
  /** An instance, a schedule (named like its instance), or a rule as `instance/platform/rule name or number`. */
  name: z.string().min(1).max(500),
};
const pauseBody = z.strictObject({ ...target, reason: z.string().max(1_000).optional() });

const entryView = z.object({
  kind,
  name: z.string(),
  by: z.string().optional(),
  at: z.string().optional(),
  reason: z.string().optional(),
});
const stateView = z.object({
  entries: z.array(entryView),
  problems: z.array(z.string()),
  broken: z.string().optional(),
  note: z.string(),
});

/**
 * `GET/POST/DELETE /api/pauses`: what is paused, pause one thing, resume it; the same note (`system/paused.md`) as
 * `assistant pause` and the dashboard, which the scheduler and the worker read before each run and each task.
 */
export function registerPauseRoutes(app: AssistantServer, routes: RouteTable, options: PauseRoutesOptions): void {
  const pauses = new PauseStore({ notes: options.notes });
  const resolve = (body: { kind: z.infer<typeof kind>; name: string }) => {
    if (!options.registry) throw new AssistantError('UNAVAILABLE', 'this server runs without integrations');
    const resolved = resolvePauseTarget({ registry: options.registry, kind: body.kind, name: body.name });
    if (!resolved.ok) throw new AssistantError('NOT_FOUND', resolved.problem, { hint: resolved.hint });
    return resolved.name;
  };
  routes.add(app, {
    method: 'GET',
    url: '/api/pauses',
    tag: 'pauses',
    summary: 'What is paused',
    description:
      'The paused integration instances, automation rules and schedules, with who paused each, when and why, as `notes/system/paused.md` records them. Entries the note holds that cannot be read are listed under `problems`; a note whose frontmatter does not parse is reported under `broken` and nothing is known to be paused.',
    responses: { 200: { description: 'the pause note as read', schema: stateView } },
    handler: async () => ({ ...(await pauses.read()), note: 'notes/system/paused.md' }),
  });
  routes.add(app, {
    method: 'POST',
    url: '/api/pauses',
    tag: 'pauses',
    summary: 'Pause an integration instance, an automation rule or a schedule',
    description:
      "A paused instance's schedule does not fire and its queued tasks wait in pending/ (looked at again every 30 s) until it is resumed; a paused rule is applied to no item; a paused schedule does not fire. No restart and no change to config.yaml. Pausing what is paused already keeps the first record (`already: true`).",
    body: pauseBody,
    responses: {
      201: { description: 'paused', schema: z.object({ entry: entryView, already: z.boolean() }) },
      400: { description: 'a bad body', schema: errorBodySchema },
      404: { description: 'no such instance, rule or schedule; the hint lists what exists', schema: errorBodySchema },
      409: { description: 'the pause note does not parse: fix it by hand first', schema: errorBodySchema },
      503: { description: 'the server runs without integrations', schema: errorBodySchema },
    },
    handler: async ({ body, reply }) => {
      const name = resolve(body);
      const result = await brokenAsConflict(() =>
        pauses.pause({ kind: body.kind, name, by: 'api', reason: body.reason }),
      );
      if (!result.already) {
        await options.humanLog.write({
          source: 'api',
          message: `paused ${body.kind} ${name}`,
          reason: describePause(result.entry),
        });
      }
      return reply.code(201).send(result);
    },
  });
  routes.add(app, {
    method: 'DELETE',
    url: '/api/pauses',
    tag: 'pauses',
    summary: 'Resume a paused integration instance, automation rule or schedule',
    description: 'Removes its entry from the pause note. A queued task of a resumed instance runs within 30 s.',
    query: z.object(target),
    responses: {
      200: { description: 'resumed: the entry removed', schema: z.object({ resumed: entryView }) },
      404: { description: 'it is not paused, or there is no such thing', schema: errorBodySchema },
      409: { description: 'the pause note does not parse: fix it by hand first', schema: errorBodySchema },
    },
    handler: async ({ query }) => {
      // A name config.yaml no longer has can still be resumed: the note may outlive a rename.
      const known = options.registry ? resolvePauseTarget({ registry: options.registry, ...query }) : undefined;
      const name = known?.ok ? known.name : query.name;
      const resumed = await brokenAsConflict(() => pauses.resume({ kind: query.kind, name }));
      if (!resumed) throw new AssistantError('NOT_FOUND', `${query.kind} ${name} is not paused`);
      await options.humanLog.write({ source: 'api', message: `resumed ${query.kind} ${name}` });
      return { resumed };
    },
  });
}

/** A pause note that does not parse is the owner's to fix: 409 with its file and line, never overwritten. */
async function brokenAsConflict<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof BrokenNoteError) {
      throw new AssistantError('CONFLICT', `notes/${error.message}`, {
        hint: 'the pause note does not parse; fix it by hand (or delete it to resume everything), then try again',
      });
    }
    throw error;
  }
}
