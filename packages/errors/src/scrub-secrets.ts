/**
 * Every secret value this process has loaded, so text about to be written somewhere a person or another program can
 * read it (a task file, an agent's events, a log line, a note, an API response) can be scrubbed of them first. An
 * LLM endpoint, a proxy or a mail server that echoes the `Authorization` header in its error body must not put the
 * token into `data/`.
 *
 * Process-wide on purpose: the places that write are many and far from config loading, and a secret missed at one of
 * them is a leak. `Secret` (packages/config) registers its value when it is created.
 */
const registered = new Set<string>();
/** Every form a registered value is searched for in, longest first so a longer form is replaced whole. */
let patterns: string[] = [];

/** Values shorter than this are not scrubbed: replacing every `abc` in every log would garble it and protect nothing. */
const minScrubbedSecretLength = 6;

/** What a scrubbed secret reads as. */
const scrubbedSecretText = '[secret]';

/** Remembers a secret value so `scrubSecrets` removes it (and its common encodings) from text from now on. */
export function registerSecretValue(value: string): void {
  if (value.trim().length < minScrubbedSecretLength || registered.has(value)) return;
  registered.add(value);
  const forms = new Set<string>([value, ...encodingsOf(value)]);
  patterns = [...new Set([...patterns, ...forms])]
    .filter((form) => form.length >= minScrubbedSecretLength)
    .sort((left, right) => right.length - left.length);
}

/** For tests: forgets every registered value. */
export function clearSecretValues(): void {
  registered.clear();
  patterns = [];
}

/** Replaces every registered secret value, in any of its common encodings, by `[secret]`. */
export function scrubSecrets(text: string): string {
  if (patterns.length === 0 || text.length < minScrubbedSecretLength) return text;
  let result = text;
  for (const pattern of patterns) {
    if (result.includes(pattern)) result = result.split(pattern).join(scrubbedSecretText);
  }
  return result;
}

/** True when `text` holds a registered secret in any of its forms. */
function containsSecret(text: string): boolean {
  return patterns.some((pattern) => text.includes(pattern));
}

/**
 * Scrubs every string in a JSON-like value (objects, arrays, error messages and stacks), returning a copy; other
 * values are returned as they are. Errors become plain `{name, message, stack}` objects only when they held a secret.
 */
export function scrubSecretsDeep<T>(value: T): T {
  if (patterns.length === 0) return value;
  return scrubValue(value, 0) as T;
}

function scrubValue(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return scrubSecrets(value);
  if (value === null || typeof value !== 'object' || depth > 64) return value;
  if (Array.isArray(value)) return value.map((item) => scrubValue(item, depth + 1));
  if (value instanceof Error) {
    if (!containsSecret(`${value.message}\n${value.stack ?? ''}`)) return value;
    const copy = new Error(scrubSecrets(value.message));
    copy.name = value.name;
    copy.stack = scrubSecrets(value.stack ?? '');
    return copy;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) copy[key] = scrubValue(item, depth + 1);
  return copy;
}

/**
 * The forms a secret commonly travels in: URL- and JSON-escaped, base64 and base64url (alone, and at the three
 * alignments it can take inside a longer base64 text such as `Basic base64(user:password)`), and hex.
 */
function encodingsOf(value: string): string[] {
  const forms = [encodeURIComponent(value), JSON.stringify(value).slice(1, -1), Buffer.from(value).toString('hex')];
  for (let offset = 0; offset < 3; offset++) {
    // base64 of (offset filler bytes + value): the characters fully determined by the value alone are the same
    // wherever in a longer text the value sits at that alignment.
    const encoded = Buffer.from(`${'\0'.repeat(offset)}${value}`).toString('base64');
    const bytes = offset + Buffer.byteLength(value);
    const stable = encoded.slice(Math.ceil((offset * 8) / 6), Math.floor((bytes * 8) / 6));
    if (stable.length >= minScrubbedSecretLength) {
      forms.push(stable, stable.replaceAll('+', '-').replaceAll('/', '_'));
    }
  }
  const full = Buffer.from(value).toString('base64');
  forms.push(full, full.replace(/=+$/, ''), Buffer.from(value).toString('base64url'));
  return forms;
}
