/**
 * HTML from tagged templates, escaped by default: every interpolated value is text unless it is already `SafeHtml`
 * (made by `html` itself or, for markup we produced some other way such as rendered markdown, by `trustedHtml`).
 * A note body or a mail subject holding `<script>` therefore renders as text wherever it is interpolated.
 */
export class SafeHtml {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  toString(): string {
    return this.#value;
  }
}

/** What may be interpolated: text (escaped), numbers, markup, lists of either, and nothing (`false`, null). */
export type HtmlValue = SafeHtml | string | number | bigint | boolean | null | undefined | readonly HtmlValue[];

const escapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe for element content and for quoted attribute values. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => escapes[character] ?? character);
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.toString();
  if (value === null || value === undefined || value === false || value === true) return '';
  if (Array.isArray(value)) return value.map((item: HtmlValue) => render(item)).join('');
  return escapeHtml(String(value));
}

/** `html\`<p>${text}</p>\`` escapes `text`; nested `html` results and arrays of them are kept as markup. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] ?? '';
  for (let index = 0; index < values.length; index += 1) {
    out += render(values[index]) + (strings[index + 1] ?? '');
  }
  return new SafeHtml(out);
}

/** Markup produced by a trusted renderer (markdown-it with raw HTML off). Never pass text from outside here. */
export function trustedHtml(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

/** A query string from the defined values, for links that keep the current filters. */
export function queryString(values: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) {
    if (value !== undefined && value !== '') search.set(key, String(value));
  }
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}
