/**
 * Fixture files: one readable JSON file per exchange under `<directory>/<provider>/`, named
 * `<scenario-or-first-words>-<first 12 hex digits of the key>.json` so a person finds it by either. A file holds the
 * key, the canonical request the key is made of, and the response: its status, content type, and either its JSON
 * body (`json`), its text (`body`) or, for a stream, its chunks as they arrived (`chunks`), so replay streams exactly
 * as the provider did. An optional `source` (repository, path, commit, what was edited) cites where a hand-built
 * fixture's response came from; replay ignores it and re-recording keeps it.
 *
 * The files of the first version (`<directory>/<sha256>.json`, OpenAI chat completions only, one body string) are
 * still read, see {@link readLegacyRecording}; new recordings are always written in this format (decision 0038).
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { canonicalJson, differenceSize, firstDifference, isPlainObject } from './wire-formats.ts';

/** Where a fixture's response came from: a sentence, or its repository, path, commit and what was edited. */
const sourceSchema = z.union([
  z.string(),
  z.looseObject({
    repository: z.string().optional(),
    path: z.string().optional(),
    commit: z.string().optional(),
    edited: z.string().optional(),
  }),
]);
export type FixtureSource = z.infer<typeof sourceSchema>;

const responseSchema = z
  .strictObject({
    status: z.int().min(100).max(599),
    content_type: z.string().nullable(),
    /** A stream's chunks as received, boundaries kept. */
    chunks: z.array(z.string()).optional(),
    /** A JSON body, parsed so the file reads well. */
    json: z.unknown().optional(),
    /** Any other body, as text. */
    body: z.string().optional(),
  })
  .refine((response) => [response.chunks, response.json, response.body].filter((x) => x !== undefined).length === 1, {
    message: 'a response holds exactly one of `chunks`, `json` or `body`',
  });

/** What one fixture file holds; validated on read because people write and edit these files by hand. */
const fixtureSchema = z.looseObject({
  key: z.string().optional(),
  provider: z.string(),
  model: z.string(),
  recorded_at: z.string().optional(),
  source: sourceSchema.optional(),
  request: z.looseObject({
    endpoint: z.string().optional(),
    stream: z.boolean().optional(),
    headers: z.record(z.string(), z.string()).optional(),
    canonical: z.record(z.string(), z.unknown()),
    /** The minted values the canonical request's placeholders stood for when it was recorded (`mintedKinds`). */
    minted: z.record(z.string(), z.string()).optional(),
  }),
  response: responseSchema,
});
export type Fixture = z.infer<typeof fixtureSchema>;
export type FixtureResponse = Fixture['response'];

/**
 * The key of a model request: the SHA-256 hex digest of the canonical JSON (object keys sorted at every depth) of
 * the provider and the canonical request (see `canonicalRequest`). A fixture's own `key` field is informational; the
 * transport recomputes it from the file's `provider` and `request.canonical`, so a hand-edited request stays findable.
 */
export function fixtureKey(options: { provider: string; canonical: Record<string, unknown> }): string {
  return createHash('sha256')
    .update(canonicalJson({ provider: options.provider, request: options.canonical }))
    .digest('hex');
}

/** How many hex digits of the key end a fixture's file name. */
const keyPrefixLength = 12;

/** A fixture as found on disk. */
export interface StoredFixture {
  file: string;
  key: string;
  fixture: Fixture;
}

/** The fixture of `key` under `providerDirectory`, looked up by file name first, then among all its files. */
export async function findFixture(options: {
  providerDirectory: string;
  key: string;
  signal?: AbortSignal | undefined;
}): Promise<StoredFixture | undefined> {
  const names = await listFixtureNames(options.providerDirectory);
  const suffix = `-${options.key.slice(0, keyPrefixLength)}.json`;
  const named = names.filter(
    (name) => name.endsWith(suffix) || name === `${options.key.slice(0, keyPrefixLength)}.json`,
  );
  for (const name of [...named, ...names.filter((name) => !named.includes(name))]) {
    options.signal?.throwIfAborted();
    const stored = await readFixture(path.join(options.providerDirectory, name));
    if (stored.key === options.key) return stored;
  }
  return undefined;
}

/** Every fixture under `providerDirectory`, for finding the closest one to a missed request. */
export async function readAllFixtures(providerDirectory: string): Promise<StoredFixture[]> {
  const names = await listFixtureNames(providerDirectory);
  return Promise.all(names.map((name) => readFixture(path.join(providerDirectory, name))));
}

/** The closest fixture to a missed request: same model first, then the fewest differing values. */
export function closestFixture(options: {
  fixtures: StoredFixture[];
  model: string;
  canonical: Record<string, unknown>;
}): ClosestFixture | undefined {
  let best: { stored: StoredFixture; score: number } | undefined;
  for (const stored of options.fixtures) {
    const score =
      (stored.fixture.model === options.model ? 0 : 1_000_000) +
      differenceSize(stored.fixture.request.canonical, options.canonical);
    if (best === undefined || score < best.score) best = { stored, score };
  }
  if (best === undefined) return undefined;
  const difference = firstDifference(best.stored.fixture.request.canonical, options.canonical);
  return {
    file: best.stored.file,
    model: best.stored.fixture.model,
    ...(difference === undefined ? {} : { difference }),
  };
}

/** The fixture nearest a missed request, and where it first differs. */
export interface ClosestFixture {
  file: string;
  model: string;
  /** The first differing JSON path of the canonical requests, with the recorded and requested values. */
  difference?: { path: string; recorded: unknown; requested: unknown };
}

/**
 * Writes `fixture` for its key, replacing an earlier recording of the same key (whatever its name) and keeping that
 * recording's `source` citation.
 */
export async function writeFixture(options: {
  providerDirectory: string;
  key: string;
  label: string;
  fixture: Fixture;
}): Promise<string> {
  const earlier = await findFixture({ providerDirectory: options.providerDirectory, key: options.key });
  const fixture =
    earlier?.fixture.source !== undefined && options.fixture.source === undefined
      ? { ...options.fixture, source: earlier.fixture.source }
      : options.fixture;
  const file = path.join(options.providerDirectory, `${options.label}-${options.key.slice(0, keyPrefixLength)}.json`);
  await writeAtomically(file, `${JSON.stringify(orderedFixture(fixture), null, 2)}\n`);
  if (earlier !== undefined && earlier.file !== file) await rm(earlier.file, { force: true });
  return file;
}

// Field order for the reader: what it is, where it came from, what was asked, what was answered.
function orderedFixture(fixture: Fixture): Fixture {
  const { key, provider, model, recorded_at, source, request, response, ...rest } = fixture;
  return {
    ...(key === undefined ? {} : { key }),
    provider,
    model,
    ...(recorded_at === undefined ? {} : { recorded_at }),
    ...(source === undefined ? {} : { source }),
    ...rest,
    request,
    response,
  };
}

/** A file-name-safe label: lower-case words joined by `-`, at most 48 characters; `request` when nothing is left. */
export function fileLabel(text: string): string {
  const label = text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/, '');
  return label === '' ? 'request' : label;
}

async function listFixtureNames(directory: string): Promise<string[]> {
  try {
    return (await readdir(directory)).filter((name) => name.endsWith('.json')).sort();
  } catch (error) {
    if (isMissingFile(error)) return [];
    throw error;
  }
}

async function readFixture(file: string): Promise<StoredFixture> {
  const text = await readFile(file, 'utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`LLM fixture ${file} is not valid JSON; fix it, delete it or record again.`, { cause: error });
  }
  const parsed = fixtureSchema.safeParse(json);
  if (!parsed.success) {
    throw new Error(
      `LLM fixture ${file} does not have the expected shape; fix it, delete it or record again.\n${z.prettifyError(parsed.error)}`,
      { cause: parsed.error },
    );
  }
  return {
    file,
    key: fixtureKey({ provider: parsed.data.provider, canonical: parsed.data.request.canonical }),
    fixture: parsed.data,
  };
}

// ------------------------------------------------------------------------------------ first-version recordings

const legacyRecordingSchema = z.object({
  key: z.string(),
  recorded_at: z.string(),
  request: z.object({ url: z.string(), body: z.unknown() }),
  response: z.object({
    status: z.int().min(200).max(599),
    content_type: z.string().nullable(),
    body: z.string(),
  }),
});

/**
 * The key of the first version's recordings: SHA-256 of the canonical JSON of an OpenAI body's `model`, `messages`,
 * `tools` and `response_format`.
 */
export function legacyRequestKey(body: unknown): string {
  const source = isPlainObject(body) ? body : {};
  const selected: Record<string, unknown> = {};
  for (const field of ['model', 'messages', 'tools', 'response_format']) {
    if (source[field] !== undefined) selected[field] = source[field];
  }
  return createHash('sha256').update(canonicalJson(selected)).digest('hex');
}

/** A first-version recording `<directory>/<legacy key>.json` of an OpenAI request body, as a fixture response. */
export async function readLegacyRecording(options: {
  directory: string;
  body: unknown;
}): Promise<{ file: string; response: FixtureResponse } | undefined> {
  const file = path.join(options.directory, `${legacyRequestKey(options.body)}.json`);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (isMissingFile(error)) return undefined;
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`LLM cache recording ${file} is not valid JSON; delete it or record again.`, { cause: error });
  }
  const parsed = legacyRecordingSchema.safeParse(json);
  if (!parsed.success) {
    throw new Error(
      `LLM cache recording ${file} does not have the expected shape; delete it or record again.\n${z.prettifyError(parsed.error)}`,
      { cause: parsed.error },
    );
  }
  const { status, content_type: contentType, body } = parsed.data.response;
  return { file, response: { status, content_type: contentType, body } };
}

// Write to a temporary file and rename it into place, so a reader never sees half a fixture and two writers of the
// same key leave one whole file.
async function writeAtomically(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.${randomUUID()}.tmp`;
  try {
    // 0o600: a fixture holds the prompt and the answer, mail and transcripts included.
    await writeFile(temporary, text, { encoding: 'utf8', mode: 0o600 });
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

function isMissingFile(error: unknown): boolean {
  return error instanceof Error && 'code' in error && error.code === 'ENOENT';
}
