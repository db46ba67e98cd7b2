import type * as z from 'zod';
import { type ConfigPath, type ConfigProblem, nearest } from './problems.ts';
import { Secret } from './secret.ts';
import type { YamlSource } from './yaml-source.ts';
import { Yolo } from './yolo.ts';

type AnySchema = z.core.$ZodType;

// Zod reports an unknown key with the object's path but not the object's schema; the error map below sees the
// schema, so it remembers it against the input object for the hint ("did you mean", "belongs under").
const schemasByInput = new WeakMap<object, AnySchema[]>();

/** Pass as `{ error: recordSchemas }` to every safeParse whose issues go through {@link issuesToProblems}. */
export const recordSchemas: z.core.$ZodErrorMap = (issue) => {
  if (issue.code === 'unrecognized_keys' && issue.inst && typeof issue.input === 'object' && issue.input !== null) {
    // Union branches report the same object against different schemas; keep them all and choose later.
    const schemas = schemasByInput.get(issue.input) ?? [];
    schemas.push(issue.inst as AnySchema);
    schemasByInput.set(issue.input, schemas);
  }
  return undefined;
};

/** Looks through optional/default/pipe/lazy wrappers to the schema that does the work. */
function unwrap(schema: AnySchema): AnySchema {
  let current = schema;
  for (let depth = 0; depth < 20; depth++) {
    const def = current._zod.def as unknown as Record<string, unknown> & { type: string };
    const next =
      def.type === 'pipe'
        ? (def.in as AnySchema)
        : def.type === 'lazy'
          ? (def.getter as () => AnySchema)()
          : 'innerType' in def
            ? (def.innerType as AnySchema)
            : undefined;
    if (next === undefined) return current;
    current = next;
  }
  return current;
}

function shapeOf(schema: AnySchema): Record<string, AnySchema> | undefined {
  const inner = unwrap(schema);
  const def = inner._zod.def as unknown as { type: string; shape?: Record<string, AnySchema>; options?: AnySchema[] };
  if (def.type === 'object') return def.shape;
  if (def.type === 'union') {
    for (const option of def.options ?? []) {
      const shape = shapeOf(option);
      if (shape) return shape;
    }
  }
  return undefined;
}

function recordValueOf(schema: AnySchema): AnySchema | undefined {
  const inner = unwrap(schema);
  const def = inner._zod.def as unknown as { type: string; valueType?: AnySchema; options?: AnySchema[] };
  if (def.type === 'record') return def.valueType;
  if (def.type === 'union') {
    for (const option of def.options ?? []) {
      const value = recordValueOf(option);
      if (value) return value;
    }
  }
  return undefined;
}

function valueAtPath(data: unknown, path: ConfigPath): unknown {
  let current = data;
  for (const segment of path) {
    if (current instanceof Yolo) current = current.value;
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string | number, unknown>)[segment];
  }
  return current instanceof Yolo ? current.value : current;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'an empty value';
  if (value instanceof Secret) return 'a `!secret`';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  // A URL's user name and password are masked even in a value too broken to be a URL: they are credentials.
  const text = JSON.stringify(
    typeof value === 'string' ? value.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1***@') : value,
  );
  return `\`${text.length > 40 ? `${text.slice(0, 37)}...` : text}\` (${typeof value})`;
}

/**
 * Where, below the object that rejected it, a key would be valid: `schedule` for a stray `every:`,
 * `classifications` for a question one indent short, `platforms.<name>` for a stray `classifications:`.
 */
function findHome(key: string, value: unknown, schema: AnySchema, depth: number): string | undefined {
  const shape = shapeOf(schema);
  if (!shape) return undefined;
  for (const [field, fieldSchema] of Object.entries(shape)) {
    const childShape = shapeOf(fieldSchema);
    if (childShape && key in childShape) return field;
    const recordValue = recordValueOf(fieldSchema);
    if (recordValue && (recordValue as z.ZodType).safeParse(value).success) return field;
    if (recordValue && key in (shapeOf(recordValue) ?? {})) return `${field}.<name>`;
  }
  if (depth <= 1) return undefined;
  for (const [field, fieldSchema] of Object.entries(shape)) {
    const below = findHome(key, value, fieldSchema, depth - 1);
    if (below) return `${field}.${below}`;
  }
  return undefined;
}

/**
 * Where an unknown key belongs if it is at the wrong depth, or the valid key it is a typo of. A key that is valid,
 * exactly, one level down is taken to be mis-indented before it is taken for a typo of a neighbour (`imap_server:`
 * is not `mcp_servers:`). At the top of the file the hint names the whole key path: `did you mean server.port?`.
 */
function unknownKeyHint(
  key: string,
  value: unknown,
  schema: AnySchema | undefined,
  atTop: boolean,
): string | undefined {
  const shape = schema ? shapeOf(schema) : undefined;
  if (!schema || !shape) return undefined;
  const home = findHome(key, value, schema, 2);
  const typo = nearest(key, Object.keys(shape));
  if (home && !home.includes('<name>') && atTop) {
    return `check its indentation: it belongs under \`${home}\` (did you mean \`${home}.${key}\`?)`;
  }
  if (typo) return `did you mean \`${typo}\`?`;
  if (home) return `check its indentation: it belongs under \`${home}\``;
  return `valid keys here: ${Object.keys(shape).join(', ')}`;
}

/**
 * Picks the union branch the user most plausibly meant: one that got past the shape check, with fewest issues.
 * A branch that is itself a failed union is judged by its own best branch.
 */
export function bestBranch(branches: z.core.$ZodIssue[][]): z.core.$ZodIssue[] | undefined {
  let best: z.core.$ZodIssue[] | undefined;
  for (const branch of branches) {
    let candidate: z.core.$ZodIssue[] | undefined = branch;
    const only = branch.length === 1 ? branch[0] : undefined;
    if (only?.code === 'invalid_union' && only.path.length === 0) candidate = bestBranch(only.errors);
    if (!candidate || candidate.some((issue) => issue.path.length === 0 && issue.code === 'invalid_type')) continue;
    if (!best || candidate.length < best.length) best = candidate;
  }
  return best;
}

export interface IssuesToProblemsOptions {
  issues: readonly z.core.$ZodIssue[];
  source: YamlSource;
  file: string;
  /** The data that was validated (for hints). */
  data: unknown;
}

/** Turns zod issues into located, readable problems. */
export function issuesToProblems(options: IssuesToProblemsOptions): ConfigProblem[] {
  const { source, file, data } = options;
  const problems: ConfigProblem[] = [];

  const locate = (path: ConfigPath, preferKey: boolean) => {
    for (let length = path.length; length >= 0; length--) {
      const prefix = path.slice(0, length);
      const position =
        preferKey || length < path.length
          ? (source.keyAt(prefix) ?? source.valueAt(prefix))
          : (source.valueAt(prefix) ?? source.keyAt(prefix));
      if (position) return position;
    }
    return undefined;
  };
  const add = (path: ConfigPath, message: string, hint?: string, preferKey = false): void => {
    const position = locate(path, preferKey);
    problems.push({
      severity: 'error',
      file,
      path,
      message,
      ...(position ? { position } : {}),
      ...(hint ? { hint } : {}),
    });
  };

  const visit = (issue: z.core.$ZodIssue, base: ConfigPath): void => {
    const path = [...base, ...(issue.path as (string | number)[])];
    const value = valueAtPath(data, path);
    if (issue.code === 'unrecognized_keys') {
      const schema = typeof value === 'object' && value !== null ? closestSchema(value, issue.keys) : undefined;
      for (const key of issue.keys) {
        const keyPath = [...path, key];
        add(
          keyPath,
          `unknown key \`${key}\``,
          unknownKeyHint(key, valueAtPath(data, keyPath), schema, path.length === 0),
          true,
        );
      }
      return;
    }
    if (value instanceof Secret && (issue.code === 'invalid_type' || issue.code === 'invalid_union')) {
      add(path, '`!secret` is only accepted by secret fields (tokens, passwords)', 'write this value directly');
      return;
    }
    if (isYoloAt(data, path) && (issue.code === 'invalid_type' || issue.code === 'invalid_union')) {
      add(path, '`!yolo` is only allowed on automation actions (`then:`)');
      return;
    }
    if (issue.code === 'invalid_union') {
      const branch = bestBranch(issue.errors);
      if (branch) {
        for (const inner of branch) visit(inner, path);
        return;
      }
      add(path, issue.message.startsWith('Invalid input') ? `unexpected ${describe(value)}` : issue.message);
      return;
    }
    if (issue.code === 'invalid_type' && value === undefined) {
      const key = path.at(-1);
      add(path, typeof key === 'string' ? `missing required key \`${key}\`` : 'missing value', undefined, true);
      return;
    }
    if (issue.code === 'invalid_type' || issue.code === 'invalid_format') {
      const expected = issue.message.startsWith('Invalid input')
        ? `expected ${issue.code === 'invalid_type' ? issue.expected : 'a valid value'}`
        : issue.message;
      add(path, `${expected}, got ${describe(value)}`);
      return;
    }
    if (issue.code === 'invalid_key') {
      const inner = issue.issues[0];
      add(
        path,
        inner && !inner.message.startsWith('Invalid')
          ? inner.message
          : `\`${String(path.at(-1))}\` is not a valid key here`,
        undefined,
        true,
      );
      return;
    }
    if (issue.code === 'too_small' || issue.code === 'too_big') {
      const bound = issue.code === 'too_small' ? issue.minimum : issue.maximum;
      const word = issue.code === 'too_small' ? 'at least' : 'at most';
      const custom = !issue.message.startsWith('Too ');
      const text = custom
        ? issue.message
        : issue.origin === 'string' && issue.code === 'too_small' && Number(bound) === 1
          ? 'must not be empty'
          : issue.origin === 'array' || issue.origin === 'set'
            ? `needs ${word} ${String(bound)} item(s)`
            : issue.origin === 'string'
              ? `needs ${word} ${String(bound)} character(s)`
              : `must be ${word} ${String(bound)}, got ${describe(value)}`;
      add(path, text);
      return;
    }
    if (issue.code === 'invalid_value') {
      const choices = issue.values.map((choice) => `\`${String(choice)}\``).join(', ');
      const typo = typeof value === 'string' ? nearest(value, issue.values.map(String)) : undefined;
      add(path, `expected one of ${choices}, got ${describe(value)}`, typo ? `did you mean \`${typo}\`?` : undefined);
      return;
    }
    if (issue.code === 'custom' && Array.isArray(issue.params?.choices)) {
      const choices = issue.params.choices as string[];
      const typo = typeof value === 'string' ? nearest(value, choices) : undefined;
      const hint = typo
        ? `did you mean \`${typo}\`?`
        : choices.length > 0
          ? `known: ${choices.join(', ')}`
          : 'none is installed yet';
      add(path, issue.message, hint);
      return;
    }
    if (issue.code === 'custom' && typeof issue.params?.hint === 'string') {
      add(path, issue.message, issue.params.hint);
      return;
    }
    add(path, issue.message);
  };

  for (const issue of options.issues) visit(issue, []);
  return mergeRenamedKeys(problems);
}

/**
 * One typo is one problem: `modle:` under a profile is an unknown key whose hint is `model`, and the missing
 * required `model` it causes is said in that hint rather than as a second problem.
 */
function mergeRenamedKeys(problems: ConfigProblem[]): ConfigProblem[] {
  const parentKey = (path: ConfigPath) => JSON.stringify(path.slice(0, -1));
  const merged = new Set<ConfigProblem>();
  const result = problems.map((problem) => {
    const typo = /^did you mean `([^`]+)`\?$/.exec(problem.hint ?? '')?.[1];
    if (typo === undefined || !problem.message.startsWith('unknown key')) return problem;
    const missing = problems.find(
      (other) =>
        other.message === `missing required key \`${typo}\`` && parentKey(other.path) === parentKey(problem.path),
    );
    if (!missing) return problem;
    merged.add(missing);
    return { ...problem, hint: `did you mean \`${typo}\`? (it is required, and missing)` };
  });
  return result.filter((problem) => !merged.has(problem));
}

/** Of the schemas an object was checked against, the one that knows most of the keys it does have. */
function closestSchema(value: object, unknownKeys: readonly string[]): AnySchema | undefined {
  let best: AnySchema | undefined;
  let bestScore = -1;
  for (const schema of schemasByInput.get(value) ?? []) {
    const shape = shapeOf(schema) ?? {};
    const score = Object.keys(value).filter((key) => key in shape && !unknownKeys.includes(key)).length;
    if (score > bestScore) {
      best = schema;
      bestScore = score;
    }
  }
  return best;
}

function isYoloAt(data: unknown, path: ConfigPath): boolean {
  let current = data;
  for (const segment of path) {
    if (current instanceof Yolo) current = current.value;
    if (current === null || typeof current !== 'object') return false;
    current = (current as Record<string | number, unknown>)[segment];
  }
  return current instanceof Yolo;
}
