import * as z from 'zod';

/** A page the `fetch` tool read in this run, under the number the model cites it by. */
export interface FetchedPage {
  n: number;
  /** The URL asked for. */
  url: string;
  /** Where it ended after redirects. */
  finalUrl: string;
  title: string;
  retrievedAt: string;
}

/** What the model hands in with the `finish` tool. */
export const finishInput = z.object({
  answer: z.string().min(1).max(4_000).describe('The short answer to the question, 1-4 sentences, citing like [1].'),
  findings: z
    .array(
      z.object({
        text: z.string().min(1).max(2_000).describe('One key finding, in your own words.'),
        sources: z.array(z.int()).max(10).describe('The numbers of the fetched pages that support it.'),
      }),
    )
    .max(20),
  sources: z
    .array(z.object({ n: z.int(), url: z.string() }))
    .max(40)
    .optional()
    .describe('The pages you cite, by the number and URL the fetch tool gave them.'),
});
export type FinishInput = z.infer<typeof finishInput>;

/** A source as the note lists it. */
export interface ReportSource {
  n: number;
  url: string;
  title: string;
  retrieved_at: string;
}

export interface ResearchReport {
  answer: string;
  findings: { text: string; sources: number[] }[];
  /** Cited pages, renumbered 1… in order of first citation. */
  sources: ReportSource[];
  /** Pages read but not cited. */
  also_read: ReportSource[];
  /** What the model cited that this run did not fetch, dropped from the note's citations. */
  unverified: string[];
}

/** A URL as pages and citations are matched by: its fragment dropped (`#section` is the same page). */
export const normalise = (url: string) => {
  try {
    const parsed = new URL(url);
    parsed.hash = '';
    return parsed.href;
  } catch {
    return url;
  }
};

/** `[n]` in the model's text, with the spaces before it and a link target `(…)` right after it. */
const citation = /\s*\[(\d+)\](?:\([^)]*\))?/g;

/**
 * The note's content from the model's `finish`: only pages fetched in this run may be cited. A number the fetch tool
 * never gave, or a source whose URL is not the page under that number, is dropped (and listed as unverified); a
 * finding left with no source says so. Cited pages are renumbered in order of first citation (the answer's first),
 * at most `maxSources`; the others that were read are listed apart.
 */
export function buildReport(options: {
  finish: FinishInput;
  pages: readonly FetchedPage[];
  maxSources: number;
}): ResearchReport {
  const { finish, pages } = options;
  const byNumber = new Map(pages.map((page) => [page.n, page]));
  const byUrl = new Map<string, FetchedPage>();
  for (const page of pages) {
    byUrl.set(normalise(page.url), page);
    byUrl.set(normalise(page.finalUrl), page);
  }
  const unverified: string[] = [];
  // The model's numbers, checked against its own source list where it gave one.
  const claimed = new Map<number, FetchedPage | undefined>();
  for (const source of finish.sources ?? []) {
    const page = byUrl.get(normalise(source.url));
    if (!page) unverified.push(source.url);
    claimed.set(source.n, page);
  }
  const pageFor = (n: number) => (claimed.has(n) ? claimed.get(n) : byNumber.get(n));
  const renumbered = new Map<FetchedPage, number>();
  const cite = (n: number): number | undefined => {
    const page = pageFor(n);
    if (!page) {
      if (!claimed.has(n)) unverified.push(`[${n}]`);
      return undefined;
    }
    const known = renumbered.get(page);
    if (known !== undefined) return known;
    if (renumbered.size >= options.maxSources) return undefined;
    renumbered.set(page, renumbered.size + 1);
    return renumbered.size;
  };
  // A citation written as a link, `[1](https://elsewhere)`, loses its target: a number points to a fetched page only.
  const answer = finish.answer.replace(citation, (_, digits: string) => {
    const n = cite(Number(digits));
    return n === undefined ? '' : ` [${n}]`;
  });
  const findings = finish.findings.map((finding) => {
    const numbers = [...new Set(finding.sources.map(cite).filter((n): n is number => n !== undefined))];
    // Citations the model wrote inline in a finding's text are replaced by the checked list after it.
    return { text: finding.text.replace(citation, '').trim(), sources: numbers };
  });
  const asSource = (page: FetchedPage, n: number): ReportSource => ({
    n,
    url: page.finalUrl,
    title: page.title,
    retrieved_at: page.retrievedAt,
  });
  const sources = [...renumbered].map(([page, n]) => asSource(page, n));
  const alsoRead = pages.filter((page) => !renumbered.has(page)).map((page, index) => asSource(page, index + 1));
  return { answer: answer.trim(), findings, sources, also_read: alsoRead, unverified: [...new Set(unverified)] };
}

/** The note's body: the question, the answer, the findings with citations, and the numbered sources. */
export function reportMarkdown(question: string, report: ResearchReport): string {
  const lines = [`# ${oneLine(question)}`, '', report.answer, ''];
  if (report.findings.length > 0) {
    lines.push('## Key findings', '');
    for (const finding of report.findings) {
      const citations = finding.sources.map((n) => `[${n}]`).join('');
      lines.push(`- ${oneLine(finding.text)} ${citations || '(no source fetched in this run supports it)'}`.trimEnd());
    }
    lines.push('');
  }
  lines.push('## Sources', '');
  if (report.sources.length === 0) lines.push('None: nothing fetched in this run is cited.');
  for (const source of report.sources) lines.push(sourceLine(source, `${source.n}.`));
  lines.push('');
  if (report.also_read.length > 0) {
    lines.push('## Also read', '');
    for (const source of report.also_read) lines.push(sourceLine(source, '-'));
    lines.push('');
  }
  if (report.unverified.length > 0) {
    lines.push(
      '## Not cited',
      '',
      `The model named sources this run did not fetch; they were dropped: ${report.unverified.map((entry) => `\`${entry.replaceAll('`', "'")}\``).join(', ')}.`,
      '',
    );
  }
  return lines.join('\n');
}

function sourceLine(source: ReportSource, marker: string): string {
  const title = oneLine(source.title) || source.url;
  return `${marker} [${title.replace(/[[\]]/g, '')}](<${source.url}>) — ${source.url}, retrieved ${source.retrieved_at}`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
