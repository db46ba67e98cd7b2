import { idPattern } from './message-id.ts';

const chatRoles = ['user', 'assistant', 'system'] as const;
export type ChatRole = (typeof chatRoles)[number];

/**
 * Where a message stands. A user message is `pending` while it sits in the inbox only, `received` once it is in the
 * transcript, `answered` once an assistant message's `reply_to` names it. An assistant message is `complete`,
 * `partial` (its turn was stopped; the text is what it had said) or `failed`.
 */
export type MessageStatus = 'pending' | 'received' | 'answered' | 'complete' | 'partial' | 'failed';
const assistantStatuses = ['complete', 'partial', 'failed'] as const;
export type AssistantStatus = (typeof assistantStatuses)[number];

/** One tool step of an assistant message, folded into a `<details>` block under its text. */
export interface ToolStep {
  tool: string;
  /** One line: what the tool was asked and what it gave back. Line breaks are written as spaces. */
  summary: string;
}

/** A message as written into a transcript section. */
export interface TranscriptMessage {
  id: string;
  role: ChatRole;
  text: string;
  /** ISO 8601 time, UTC. */
  at: string;
  /** Assistant messages: the user message ids this one answers. */
  reply_to?: string[];
  /** Assistant messages only. @default 'complete' */
  status?: AssistantStatus;
  steps?: ToolStep[];
}

/** A transcript section that cannot be read back (a person edited it). Reported, never rewritten. */
export interface TranscriptProblem {
  /** The note, relative to the notes root (`chats/<id>.md`). */
  path: string;
  /** 1-based line in the note file. */
  line: number;
  message: string;
}

const headingPattern = /^### (\S+) · (\S+) · (\S+)$/;
const stepsOpenPattern = /^<details><summary>(\d+) tool steps?<\/summary>$/;
const stepPattern = /^- `([^`]+)`: ?(.*)$/;
// Text lines that would read as structure are written with one more leading backslash, and read back with one less.
const needsEscape = /^\\*(### |<details><summary>)/;
const escaped = /^\\+(### |<details><summary>)/;

/** Text as it is kept: `\n` line ends, no blank lines around it, no trailing spaces at its end. */
export function normaliseText(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/^(?:[ \t]*\n)+/, '')
    .trimEnd();
}

/** The markdown section for one message, ending in a newline. */
export function renderSection(message: TranscriptMessage): string {
  const lines = [`### ${message.role} · ${message.at} · ${message.id}`];
  if (message.role === 'assistant') {
    lines.push(`reply_to: ${(message.reply_to ?? []).join(', ')} · status: ${message.status ?? 'complete'}`);
  }
  lines.push('');
  const text = normaliseText(message.text);
  if (text !== '') {
    lines.push(...text.split('\n').map((line) => (needsEscape.test(line) ? `\\${line}` : line)));
  }
  const steps = message.steps ?? [];
  if (steps.length > 0) {
    lines.push(
      '',
      `<details><summary>${steps.length} tool step${steps.length === 1 ? '' : 's'}</summary>`,
      '',
      ...steps.map((step) => `- \`${step.tool.replace(/`/g, "'")}\`: ${step.summary.replace(/\s*\n\s*/g, ' ')}`),
      '',
      '</details>',
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Appends a section to a transcript body, one blank line after whatever the body ends with. */
export function appendSection(body: string, section: string): string {
  if (body.trim() === '') return section;
  return `${body.replace(/\n*$/, '')}\n\n${section}`;
}

/**
 * Reads the messages back from a transcript body. A section that does not parse is skipped and reported with the
 * file line of its heading (`firstLine` is the file line the body starts on), so one hand edit gone wrong never
 * hides the rest of the conversation.
 */
export function parseTranscript(
  body: string,
  options: { path: string; firstLine: number },
): { messages: TranscriptMessage[]; problems: TranscriptProblem[] } {
  const lines = body.replace(/\r\n?/g, '\n').split('\n');
  const messages: TranscriptMessage[] = [];
  const problems: TranscriptProblem[] = [];
  const seen = new Set<string>();
  const starts: number[] = [];
  lines.forEach((line, index) => {
    if (line.startsWith('### ')) starts.push(index);
  });
  starts.forEach((start, position) => {
    const end = starts[position + 1] ?? lines.length;
    const report = (offset: number, message: string) =>
      problems.push({ path: options.path, line: options.firstLine + start + offset, message });
    const parsed = parseSection(lines.slice(start, end), report);
    if (!parsed) return;
    if (seen.has(parsed.id)) {
      report(0, `message id ${parsed.id} appears twice; the later section is skipped`);
      return;
    }
    seen.add(parsed.id);
    messages.push(parsed);
  });
  return { messages, problems };
}

function parseSection(
  section: string[],
  report: (offset: number, message: string) => void,
): TranscriptMessage | undefined {
  const heading = section[0] ?? '';
  const match = headingPattern.exec(heading);
  if (!match) {
    report(0, `expected a heading \`### <role> · <time> · <id>\`, got \`${heading}\``);
    return undefined;
  }
  const [, role = '', at = '', id = ''] = match;
  if (!(chatRoles as readonly string[]).includes(role)) {
    report(0, `unknown role \`${role}\` (expected ${chatRoles.join(', ')})`);
    return undefined;
  }
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(at) || Number.isNaN(Date.parse(at))) {
    report(0, `time \`${at}\` is not an ISO 8601 UTC time like 2026-11-23T18:47:26.123Z`);
    return undefined;
  }
  if (!idPattern.test(id)) {
    report(0, `message id \`${id}\` is not a valid id`);
    return undefined;
  }
  let index = 1;
  const message: TranscriptMessage = { id, role: role as ChatRole, text: '', at };
  if (role === 'assistant') {
    const attributes = /^reply_to: ?(.*?) · status: (\S+)$/.exec(section[1] ?? '');
    const status = attributes?.[2] ?? '';
    const replyTo = (attributes?.[1] ?? '')
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== '');
    if (
      !attributes ||
      !(assistantStatuses as readonly string[]).includes(status) ||
      !replyTo.every((part) => idPattern.test(part))
    ) {
      report(1, `expected \`reply_to: <ids> · status: complete|partial|failed\`, got \`${section[1] ?? ''}\``);
      return undefined;
    }
    message.reply_to = replyTo;
    message.status = status as AssistantStatus;
    index = 2;
  }
  if ((section[index] ?? '') !== '') {
    report(index, 'expected a blank line before the message text');
    return undefined;
  }
  let content = section.slice(index + 1);
  while (content.length > 0 && content.at(-1)?.trim() === '') content = content.slice(0, -1);
  const opening = content.findIndex((line) => stepsOpenPattern.test(line));
  if (opening !== -1) {
    const block = content.slice(opening + 1);
    if (block.at(-1) !== '</details>') {
      report(index + 1 + opening, 'a tool-steps `<details>` block without its closing `</details>` line');
      return undefined;
    }
    const steps: ToolStep[] = [];
    for (const [offset, line] of block.slice(0, -1).entries()) {
      if (line.trim() === '') continue;
      const step = stepPattern.exec(line);
      if (!step) {
        report(index + 2 + opening + offset, `expected a tool step \`- \\\`tool\\\`: summary\`, got \`${line}\``);
        return undefined;
      }
      steps.push({ tool: step[1] ?? '', summary: step[2] ?? '' });
    }
    message.steps = steps;
    content = content.slice(0, opening);
    while (content.length > 0 && content.at(-1)?.trim() === '') content = content.slice(0, -1);
  }
  message.text = content.map((line) => (escaped.test(line) ? line.slice(1) : line)).join('\n');
  return message;
}
