// biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is the point
const controlCharacters = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** `text` with each control character (escape sequences, carriage returns, line breaks) replaced by a space. */
export function withoutControlCharacters(text: string): string {
  return text.replace(controlCharacters, ' ');
}

/**
 * A short one-line summary of an event's data for lists (`assistant events ls`, the dashboard): the first few
 * top-level values as `key=value`, strings quoted. Control characters are replaced, so an outsider's subject cannot
 * move a terminal's cursor or forge a line; the dashboard escapes the result as HTML besides.
 */
export function summarizeEventData(options: { data: Record<string, unknown>; maxChars?: number }): string {
  const maxChars = options.maxChars ?? 100;
  const parts: string[] = [];
  for (const [key, value] of Object.entries(options.data)) {
    if (value === undefined || value === null) continue;
    const text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
    parts.push(`${key}=${text.length > 60 ? `${text.slice(0, 59)}…` : text}`);
  }
  const line = withoutControlCharacters(parts.join(' '));
  return line.length > maxChars ? `${line.slice(0, maxChars - 1)}…` : line;
}
