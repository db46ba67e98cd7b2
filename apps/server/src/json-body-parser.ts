import { AssistantError } from '@assistant/errors';
import { jsonTextNestingDepth, maxTaskNestingDepth } from '@assistant/queue';
import type { AssistantServer } from './server-type.ts';

/** A request body may wrap a task payload in one object: `{type, payload}`. */
const maxBodyNestingDepth = maxTaskNestingDepth + 1;

/**
 * The only body parser: JSON, measured before it is parsed. A linear scan refuses nesting past the task limit with
 * a 400, so no route ever parses (and no zod schema, YAML writer or fingerprint ever recurses through) input the
 * worker could not run; a body 3,000 levels deep used to blow the stack into a 500, one 1,000 deep to become a
 * task the worker quarantined. An empty body is no body, for POSTs that take none.
 */
export function registerJsonBodyParser(app: AssistantServer): void {
  // Prototype poisoning (`__proto__`, `constructor.prototype`) is refused, as fastify does by default.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    const depth = jsonTextNestingDepth(text, maxBodyNestingDepth);
    if (depth > maxBodyNestingDepth) {
      return done(
        new AssistantError(
          'BAD_REQUEST',
          `the JSON body nests deeper than ${maxBodyNestingDepth} levels; a task payload may nest at most ${maxTaskNestingDepth} levels (the queue's maxTaskNestingDepth)`,
        ),
        undefined,
      );
    }
    parseJson(request, text, done);
  });
}
