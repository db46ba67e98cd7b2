import * as z from 'zod';
import { type ConfigPath, type ConfigProblem, sortProblems } from './problems.ts';
import { type Automation, automationSchema } from './schema.ts';
import { readYaml } from './yaml-source.ts';
import { issuesToProblems, recordSchemas } from './zod-problems.ts';

export interface ParseAutomationsOptions {
  /** The file's text. */
  text: string;
  /** The name problems show. */
  file: string;
}

export interface ParseAutomationsResult {
  /** The automations, normalised as config.yaml's are; undefined when the file has errors. */
  automations: Automation[] | undefined;
  errors: ConfigProblem[];
  /**
   * A problem found later in automation `index` (at `path` inside it: `['when', 'humn']`), located in the file like
   * the schema's own: at the key for `at: 'key'`, else at the value, else at the nearest enclosing key.
   */
  locate(
    index: number,
    path: ConfigPath,
    problem: { message: string; hint?: string | undefined; at?: 'key' | 'value' | undefined },
  ): ConfigProblem;
}

/**
 * Reads a file of automations written as under a platform's `automations:` in config.yaml: one automation (a
 * mapping with `when:` and `then:`) or a list of them, `!yolo` allowed on actions and `!secret` not at all. Used by
 * `assistant automations explain --rule FILE` to try a rule before it goes into config.yaml. Never throws for bad
 * input: every problem comes back with file, line and column.
 */
export function parseAutomations(options: ParseAutomationsOptions): ParseAutomationsResult {
  const { file } = options;
  const source = readYaml({
    text: options.text,
    file,
    resolveSecret: () => ({
      message: '`!secret` has no place in a rule',
      hint: 'a rule names conditions and actions; secrets belong to integration settings',
    }),
  });
  const single = source.data !== null && typeof source.data === 'object' && !Array.isArray(source.data);
  const pathOf = (index: number, path: ConfigPath): ConfigPath => (single ? path : [index, ...path]);
  const locate: ParseAutomationsResult['locate'] = (index, path, problem) => {
    const full = pathOf(index, path);
    let position: ConfigProblem['position'];
    for (let length = full.length; length >= 0 && position === undefined; length--) {
      const prefix = full.slice(0, length);
      position =
        problem.at === 'key' || length < full.length
          ? (source.keyAt(prefix) ?? source.valueAt(prefix))
          : (source.valueAt(prefix) ?? source.keyAt(prefix));
    }
    return {
      severity: 'error',
      file,
      path: full,
      message: problem.message,
      ...(position ? { position } : {}),
      ...(problem.hint ? { hint: problem.hint } : {}),
    };
  };
  if (source.problems.length > 0) return { automations: undefined, errors: sortProblems(source.problems), locate };
  if (source.data === null || source.data === undefined || (!single && !Array.isArray(source.data))) {
    return {
      automations: undefined,
      errors: [
        {
          severity: 'error',
          file,
          path: [],
          position: { line: 1, col: 1 },
          message: 'expected one automation (a mapping with `when:` and `then:`) or a list of them',
        },
      ],
      locate,
    };
  }
  const schema = single ? automationSchema.transform((automation) => [automation]) : z.array(automationSchema).min(1);
  const result = schema.safeParse(source.data, { error: recordSchemas });
  if (!result.success) {
    const errors = issuesToProblems({ issues: result.error.issues, source, file, data: source.data });
    return { automations: undefined, errors: sortProblems(errors), locate };
  }
  return { automations: result.data, errors: [], locate };
}
