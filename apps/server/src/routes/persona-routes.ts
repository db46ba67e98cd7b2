import {
  loadPersonas,
  type PersonaConfig,
  personaEntries,
  personaEntryJson,
  personaNamed,
  personaProblemJson,
  personaSourcesOf,
} from '@assistant/agents';
import * as z from 'zod';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';

export interface PersonaRoutesOptions {
  /** Where the personas are (beside config.yaml, in the notes) and what their names are checked against. */
  config: PersonaConfig;
}

const personaParams = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { error: 'expected a persona name such as researcher' }),
});

const problemSchema = z.looseObject({
  file: z.string(),
  line: z.int().optional(),
  key: z.string().optional(),
  message: z.string(),
});

const personaSchema = z.looseObject({
  name: z.string(),
  source: z.string(),
  usable: z.boolean(),
  problems: z.array(problemSchema),
});

/**
 * `/api/personas`: each persona as `assistant personas ls|show` shows it (docs/agents.md, "Personas"). Read from the
 * files at every request, as a loop reads them when it starts: an edit shows at once, without a restart. Read only.
 */
export function registerPersonaRoutes(app: AssistantServer, routes: RouteTable, options: PersonaRoutesOptions): void {
  const load = () => loadPersonas(personaSourcesOf(options.config));

  routes.add(app, {
    method: 'GET',
    url: '/api/personas',
    tag: 'personas',
    summary: 'Every persona, broken ones flagged',
    description:
      "`personas`: each persona beside config.yaml (`personas/*.md`), in the notes (`notes/personas/*.md`) and the built-in `assistant` unless a file replaces it, with its frontmatter normalised (defaults filled in), its instructions, `usable`, and its file's `problems` (file, line, key, message). A persona with problems is listed with `usable: false`: a loop naming it fails with PERSONA_INVALID. `problems`: those that belong to no persona (a file whose name is not a persona name).",
    responses: {
      200: {
        description: '`personas` and `problems`',
        schema: z.object({ personas: z.array(personaSchema), problems: z.array(problemSchema) }),
      },
    },
    handler: async () => {
      const { entries, unowned } = personaEntries(await load());
      return { personas: entries.map(personaEntryJson), problems: unowned.map(personaProblemJson) };
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/personas/:name',
    tag: 'personas',
    summary: 'One persona',
    description:
      '`persona`: as one item of `GET /api/personas` (a broken one with `usable: false` and its problems). 404 PERSONA_UNKNOWN when no file defines it.',
    params: personaParams,
    responses: {
      200: { description: '`persona`', schema: z.object({ persona: personaSchema }) },
      400: { description: 'BAD_REQUEST: not a persona name', schema: errorBodySchema },
      404: { description: 'PERSONA_UNKNOWN: no persona of that name', schema: errorBodySchema },
    },
    handler: async ({ params }) => {
      const loaded = await load();
      const entry = personaEntries(loaded).entries.find((candidate) => candidate.name === params.name);
      // personaNamed throws PERSONA_UNKNOWN with the names there are.
      if (!entry) throw personaError(() => personaNamed({ name: params.name, loaded }));
      return { persona: personaEntryJson(entry) };
    },
  });
}

/** The error `lookup` throws (it always does for a name that is not listed). */
function personaError(lookup: () => unknown): unknown {
  try {
    lookup();
  } catch (error) {
    return error;
  }
  return new Error('personaNamed found a persona the listing does not have');
}
