import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';

/** A page as the model reads it: its title, its readable text and where it links to. */
export interface ReadablePage {
  title: string;
  text: string;
  /** The text was longer than `maxChars` and was cut. */
  truncated: boolean;
  /** Links of the page, absolute http(s) URLs with their text, for the model to follow (each fetch is checked again). */
  links: { text: string; url: string }[];
}

export interface ReadPageOptions {
  /** The body, already decoded. */
  body: string;
  /** Its media type: HTML (`text/html`, `application/xhtml+xml`) is reduced to its readable text; anything else passes. */
  contentType: string;
  /** The URL it came from, for relative links. */
  url: string;
  /** The most characters of text kept. */
  maxChars: number;
  /** @default 30 */
  maxLinks?: number;
}

/**
 * The readable part of a page: Mozilla's Readability (Firefox's reader view) over a linkedom document, so menus,
 * footers and scripts do not fill the model's context; a page Readability finds no article in falls back to the
 * body's text. Plain text passes through. Whitespace is collapsed and the text cut at `maxChars`.
 */
export function readPage(options: ReadPageOptions): ReadablePage {
  const isHtml = options.contentType === 'text/html' || options.contentType === 'application/xhtml+xml';
  if (!isHtml) return { title: '', ...cut(tidy(options.body), options.maxChars), links: [] };
  const { document } = parseHTML(options.body);
  const title = tidy(document.querySelector('title')?.textContent ?? '');
  // Links first: Readability rewrites the document it reads.
  const links = pageLinks(document, options.url, options.maxLinks ?? 30);
  let text = '';
  let articleTitle = '';
  try {
    const article = new Readability(document).parse();
    text = tidy(article?.textContent ?? '');
    articleTitle = tidy(article?.title ?? '');
  } catch {
    // A document Readability cannot walk still has a body's text.
  }
  if (!text) text = tidy(parseHTML(options.body).document.body?.textContent ?? '');
  return { title: title || articleTitle, ...cut(text, options.maxChars), links };
}

interface LinkElement {
  getAttribute(name: string): string | null;
  textContent: string | null;
}

function pageLinks(
  document: { querySelectorAll(selector: string): Iterable<LinkElement> },
  base: string,
  maxLinks: number,
): { text: string; url: string }[] {
  const seen = new Set<string>();
  const links: { text: string; url: string }[] = [];
  for (const anchor of document.querySelectorAll('a[href]')) {
    if (links.length >= maxLinks) break;
    let url: URL;
    try {
      url = new URL(anchor.getAttribute('href') ?? '', base);
    } catch {
      continue;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') continue;
    url.hash = '';
    if (seen.has(url.href) || url.href === base) continue;
    seen.add(url.href);
    links.push({ text: tidy(anchor.textContent ?? '').slice(0, 120), url: url.href });
  }
  return links;
}

/** Runs of blank lines and spaces collapsed, so the cap counts words, not indentation. */
function tidy(text: string): string {
  return text
    .replace(/[ \t\f\v\u00a0]+/g, ' ')
    .replace(/\s*\n\s*/g, '\n')
    .replace(/\n{2,}/g, '\n')
    .trim();
}

function cut(text: string, maxChars: number): { text: string; truncated: boolean } {
  return text.length <= maxChars ? { text, truncated: false } : { text: text.slice(0, maxChars), truncated: true };
}
