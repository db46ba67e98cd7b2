// Every `assistant …` command the product prints (a notification, a hint, a help text, a dashboard page) or its docs
// show must be one the CLI accepts: a notification once told the owner to run `assistant approvals approve ID`, which
// does not exist. Each command found is walked through the real command line (createProgram, commander) up to the
// point where its action would run, and is stopped there: the command path must exist and its options be known.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { createProgram } from '@assistant/cli';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/node-process.ts';

/** One command as printed, and where. */
interface PrintedCommand {
  /** Relative to the repository. */
  file: string;
  line: number;
  /** As written there, `${…}` substitutions replaced by `X`. */
  text: string;
}

/** The folders whose source prints messages, and the docs that show commands. */
const sourceRoots = ['apps', 'packages', 'integrations'];

/** Replaces the action of every command: thrown from `preAction`, after commander has checked the command line. */
class ParsedOnly extends Error {}

/**
 * How commander refused a command line, or undefined when it accepted it. A command named without its arguments
 * (`assistant approve` in a sentence) or a group named alone (`assistant queue`, which prints its help) exists:
 * what this test catches is a command path or an option that does not.
 */
async function refusal(argv: readonly string[]): Promise<string | undefined> {
  const sink = { write: () => true };
  const { program } = createProgram({ stdout: sink, stderr: sink, env: {}, cwd: repoRoot });
  program.hook('preAction', () => {
    throw new ParsedOnly();
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return undefined;
  } catch (error) {
    if (error instanceof ParsedOnly) return undefined;
    // commander's CommanderError, known by its code (commander is the CLI's dependency, not the tests').
    const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
    if (typeof code === 'string' && code.startsWith('commander.')) {
      const accepted = [
        'commander.missingArgument',
        'commander.optionMissingArgument',
        'commander.missingMandatoryOptionValue',
        'commander.help',
        'commander.helpDisplayed',
        'commander.version',
      ];
      return accepted.includes(code) ? undefined : (error as Error).message.replace(/^error: /, '');
    }
    throw error;
  }
}

/** A placeholder in a usage line or message (`ID`, `<id>`, `${id}`, `N`, `words...`) becomes a dummy value. */
function isPlaceholder(token: string): boolean {
  return (
    /^[A-Z][A-Z0-9_-]*(\.\.\.|…)?$/.test(token) ||
    /^<[^>]+>$/.test(token) ||
    /^\$\{[^}]*\}$/.test(token) ||
    /^[a-z][a-z-]*(\.\.\.|…)$/.test(token)
  );
}

/** Splits a command into words as a shell would, keeping quoted strings whole. */
function shellWords(text: string): string[] {
  // A word is a run of unquoted text and quoted parts (`personal/inbox/"archive robots"` is one word).
  const word = /(?:[^\s'"]+|'[^']*'|"(?:[^"\\]|\\.)*")+/g;
  const part = /'([^']*)'|"((?:[^"\\]|\\.)*)"|([^'"]+)/g;
  return [...text.matchAll(word)].map((match) =>
    [...match[0].matchAll(part)].map((piece) => piece[1] ?? piece[2]?.replace(/\\(.)/g, '$1') ?? piece[3]).join(''),
  );
}

/**
 * The argument lists a printed command stands for. A usage line is expanded: brackets are dropped (so every optional
 * part is given), a lone `|` between options is dropped, and `approve|reject` yields one list per alternative.
 */
function argumentLists(command: string): string[][] {
  let text = command
    .replace(/^\s*\$\s+/, '')
    .replace(/\s+#\s.*$/, '')
    .trim();
  // What follows a pipe, `&&`, `;` or a redirection is another command (or a file), not this one's arguments.
  text = text.split(/\s(?:&&|\|\||;|2?>>?|<)\s|;\s*$/)[0] ?? text;
  text = text.replace(/\s\|\s(?![^[]*\])/, '\u0000').split('\u0000')[0] ?? text;
  const words = shellWords(text.replace(/[[\]]/g, ' ').replace(/\s\|\s/g, ' '))
    .filter((word) => word !== '…' && word !== '...')
    .map((word) => word.replace(/[.,;:]$/, ''));
  if (words[0] !== 'assistant') return [];
  let lists: string[][] = [[]];
  for (const word of words.slice(1)) {
    const alternatives = /^[a-z-]+(\|[a-z-]+)+$/.test(word) ? word.split('|') : [isPlaceholder(word) ? 'x' : word];
    lists = lists.flatMap((list) => alternatives.map((alternative) => [...list, alternative]));
  }
  return lists;
}

/** The command names `assistant` has: a bare mention of one in prose counts as a command. */
function topLevelCommands(): Set<string> {
  const sink = { write: () => true };
  const { program } = createProgram({ stdout: sink, stderr: sink, env: {}, cwd: repoRoot });
  return new Set(program.commands.map((command) => command.name()));
}

/** `npx assistant`, `npm run assistant --` and `node apps/cli/src/main.ts` all run the CLI. */
function normaliseLaunchers(text: string): string {
  return text
    .replace(/\bnpm run(?: -s| --silent)? assistant(?: --)?(?=\s|$)/g, 'assistant')
    .replace(/\bnpx(?: --no-install)? assistant\b/g, 'assistant')
    .replace(/\bnode (?:\S*\/)?apps\/cli\/src\/main\.ts\b/g, 'assistant');
}

/**
 * Where a command starts in a piece of code: at its beginning, or after a prompt, a pipe, `&&`, `=`, `$(` or a box
 * drawing's border; not in the middle of words (`which assistant message answered it` in a listing).
 */
const commandStart = /(?<=(?:^|[|;&(=$>\u2500-\u257F])\s*)assistant(?=\s+-{0,2}[a-z])/g;

/** A command inside `$( … )` ends at its closing parenthesis; quoted text may hold one. */
function closeSubstitution(text: string): string {
  let quote: string | undefined;
  for (let index = 0; index < text.length; index += 1) {
    const character = text[index];
    if (quote !== undefined) {
      if (character === quote) quote = undefined;
    } else if (character === "'" || character === '"') quote = character;
    else if (character === ')') return text.slice(0, index);
  }
  return text;
}

/**
 * The commands in a piece of code (a backtick span, a `<code>` element, a line of a code block). A command ends at
 * the end of the line, at a run of spaces (a listing's next column or an aligned comment) or at a box border.
 */
function commandsInCode(code: string): { text: string; index: number }[] {
  const normalised = normaliseLaunchers(code);
  const found: { text: string; index: number }[] = [];
  for (const match of normalised.matchAll(commandStart)) {
    let rest = (normalised.slice(match.index).split('\n')[0] ?? '').split(/\s{2,}|[\u2500-\u257F]/)[0] ?? '';
    if (/\(\s*$/.test(normalised.slice(0, match.index))) rest = closeSubstitution(rest);
    found.push({ text: rest.trim(), index: match.index });
  }
  return found;
}

/**
 * The commands in a message's text: inside backticks or `<code>`, a message that is itself a command (a help
 * text's example line), and in plain words `assistant NAME …` where NAME is a real command, up to the end of the
 * phrase.
 */
function commandsInMessage(text: string, commands: ReadonlySet<string>): { text: string; index: number }[] {
  const found: { text: string; index: number }[] = [];
  const covered: [number, number][] = [];
  for (const span of text.matchAll(/`([^`\n]+)`|<code>([\s\S]*?)<\/code>/g)) {
    const inner = span[1] ?? span[2] ?? '';
    const start = span.index + span[0].indexOf(inner);
    covered.push([span.index, span.index + span[0].length]);
    for (const command of commandsInCode(inner)) found.push({ text: command.text, index: start + command.index });
  }
  const normalised = normaliseLaunchers(text);
  for (const match of normalised.matchAll(/(?:^|(?<=[\s(]))assistant\s+([a-z][a-z-]*)/g)) {
    if (covered.some(([from, to]) => match.index >= from && match.index < to)) continue;
    // In plain words only a real command's name makes a command: `the assistant has answered` is prose. (A wrong
    // command name is caught in backticks or <code>, where the product writes its commands.)
    if (!commands.has(match[1] ?? '')) continue;
    const before = normalised.slice(0, match.index);
    const atStart = before.trim() === '' || /\n\s*$/.test(before);
    const rest = normalised.slice(match.index).split('\n')[0] ?? '';
    // A help text's example line is a command to its end; in a sentence the command ends with its phrase.
    const phrase = atStart
      ? rest
      : (rest.split(/[,;:()`"<]|\.(?:\s|$)|\s{2,}|\s(?:or|and|to|then|for|when|with|\/)\s/)[0] ?? rest);
    found.push({ text: phrase.trim(), index: match.index });
  }
  return found;
}

async function filesUnder(directory: string, accept: (file: string) => boolean): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .filter((file) => !file.split(path.sep).includes('node_modules') && accept(file))
    .sort();
}

/** Source files whose strings reach a person: not tests, not test fixtures. */
function isProductSource(file: string): boolean {
  return (
    /\.(ts|js)$/.test(file) &&
    !/\.(test|d)\.ts$/.test(file) &&
    !file.split(path.sep).some((part) => part === 'testing' || part === 'fixtures')
  );
}

/** The text of every string and template literal, `${…}` written as `X`, with the line it starts on. */
function literalsOf(file: string, text: string): { text: string; line: number }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const literals: { text: string; line: number }[] = [];
  const visit = (node: ts.Node) => {
    const line = () => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
      literals.push({ text: node.text, line: line() });
    } else if (ts.isTemplateExpression(node)) {
      const parts = [node.head.text, ...node.templateSpans.map((span) => `X${span.literal.text}`)];
      literals.push({ text: parts.join(''), line: line() });
      // The substitutions are expressions of their own and may hold literals.
      for (const span of node.templateSpans) visit(span.expression);
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return literals;
}

const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length - 1;

async function sourceCommands(commands: ReadonlySet<string>): Promise<PrintedCommand[]> {
  const printed: PrintedCommand[] = [];
  for (const root of sourceRoots) {
    for (const file of await filesUnder(path.join(repoRoot, root), isProductSource)) {
      const text = await readFile(file, 'utf8');
      if (!text.includes('assistant')) continue;
      for (const literal of literalsOf(file, text)) {
        for (const command of commandsInMessage(literal.text, commands)) {
          printed.push({
            file: path.relative(repoRoot, file),
            line: literal.line + lineOf(literal.text, command.index),
            text: command.text,
          });
        }
      }
    }
  }
  return printed;
}

/** Commands in a markdown page: each line of a code block, and each inline code span. */
function markdownCommands(file: string, text: string, names: ReadonlySet<string>): PrintedCommand[] {
  const printed: PrintedCommand[] = [];
  let fenced = false;
  // A fenced line ending in `\` continues on the next, as in a shell: the command is read whole, at its first line.
  const lines = text.split('\n');
  for (let index = lines.length - 2; index >= 0; index -= 1) {
    const line = lines[index] ?? '';
    if (/\\$/.test(line) && !/^\s*(```|~~~)/.test(lines[index + 1] ?? '')) {
      lines[index] = `${line.slice(0, -1)} ${(lines[index + 1] ?? '').trim()}`;
      lines[index + 1] = '';
    }
  }
  lines.forEach((line, index) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return;
    }
    // In a code block, a shell comment is words about the command: read like a message.
    const [code = '', ...comment] = fenced ? line.split(/(?<=^|\s)#\s/) : [''];
    const commands = fenced
      ? [...commandsInCode(code), ...commandsInMessage(comment.join('# '), names)]
      : [...line.matchAll(/`([^`]+)`/g)].flatMap((span) => commandsInCode(span[1] ?? ''));
    for (const command of commands) printed.push({ file, line: index + 1, text: command.text });
  });
  return printed;
}

async function docCommands(names: ReadonlySet<string>): Promise<PrintedCommand[]> {
  const pages = [
    'README.md',
    ...(await readdir(path.join(repoRoot, 'docs')))
      .filter((name) => name.endsWith('.md'))
      .map((name) => `docs/${name}`),
    ...(await readdir(path.join(repoRoot, 'integrations'))).map((name) => `integrations/${name}/README.md`),
  ];
  const printed: PrintedCommand[] = [];
  for (const page of pages.sort()) {
    const text = await readFile(path.join(repoRoot, page), 'utf8').catch(() => undefined);
    if (text !== undefined) printed.push(...markdownCommands(page, text, names));
  }
  return printed;
}

/** Each printed command the CLI refuses, as `file:line: command: why`. */
async function refusedCommands(printed: readonly PrintedCommand[]): Promise<string[]> {
  const refused: string[] = [];
  for (const command of printed) {
    for (const argv of argumentLists(command.text)) {
      const why = await refusal(argv);
      if (why !== undefined) refused.push(`${command.file}:${command.line}: \`${command.text}\`: ${why}`);
    }
  }
  return refused;
}

/**
 * A bare `node` running the TypeScript sources: the machine's own Node, which fails on Node 20. The pinned Node
 * named by its path (`node_modules/.bin/node apps/cli/src/main.ts`) is fine, as are `npx assistant` and npm scripts.
 */
const bareNode = /(?<![\w./-])node\s+\S*apps\/cli\/src\/main\.ts|"command":\s*"node"/;

describe('the commands the product prints', () => {
  it('finds commands in messages, usage lines and code blocks, and the parser refuses a wrong one', async () => {
    const commands = topLevelCommands();
    expect(
      commandsInMessage('Answer with /approve X (or `assistant approvals approve X`).', commands).map((c) => c.text),
    ).toEqual(['assistant approvals approve X']);
    expect(commandsInMessage('run npx assistant doctor, then start it', commands).map((c) => c.text)).toEqual([
      'assistant doctor',
    ]);
    // Prose about the assistant is not a command.
    expect(commandsInMessage('Send it again once the assistant has answered.', commands)).toEqual([]);
    expect(argumentLists('assistant approve|reject ID [--json]')).toEqual([
      ['approve', 'x', '--json'],
      ['reject', 'x', '--json'],
    ]);
    expect(argumentLists('$ npm run assistant -- queue ls --state failed   # what failed')).toEqual([]);
    expect(argumentLists(normaliseLaunchers('npm run assistant -- queue ls --state failed'))).toEqual([
      ['queue', 'ls', '--state', 'failed'],
    ]);
    expect(await refusal(['approvals', 'approve', 'x'])).toMatch(/too many arguments/);
    expect(await refusal(['approve', 'x'])).toBeUndefined();
    expect(await refusal(['queue', 'ls', '--colour'])).toMatch(/unknown option/);
    expect(await refusal(['worker'])).toMatch(/unknown command/);
    const page = markdownCommands(
      'x.md',
      '```sh\nnpx assistant queue stats --json   # counts; also assistant queue ls\n```\n`assistant x`',
      commands,
    );
    expect(page.map((command) => `${command.line}: ${command.text}`)).toEqual([
      '2: assistant queue stats --json',
      '2: assistant queue ls',
      '4: assistant x',
    ]);
  });

  it('every command in a message or help text of apps/, packages/ and integrations/ exists, with known options', async () => {
    const printed = await sourceCommands(topLevelCommands());
    // The collector works: the approval notifications are among what it found.
    expect(printed.some((command) => command.text.startsWith('assistant approve X'))).toBe(true);
    expect(await refusedCommands(printed)).toEqual([]);
  });

  it('every command in README.md, docs/*.md and integrations/*/README.md exists, with known options', async () => {
    const printed = await docCommands(topLevelCommands());
    expect(printed.length).toBeGreaterThan(50);
    expect(await refusedCommands(printed)).toEqual([]);
  });

  it('never tells anyone to run the sources with a bare `node`, which is Node 20 on many machines (issue 31)', async () => {
    expect(bareNode.test('run `node apps/cli/src/main.ts start`')).toBe(true);
    expect(bareNode.test('ExecStart=/opt/assistant/node_modules/.bin/node /opt/assistant/apps/cli/src/main.ts')).toBe(
      false,
    );
    const pages = [
      'README.md',
      ...(await readdir(path.join(repoRoot, 'docs')))
        .filter((name) => name.endsWith('.md'))
        .map((name) => `docs/${name}`),
      ...(await readdir(path.join(repoRoot, 'integrations'))).map((name) => `integrations/${name}/README.md`),
    ];
    const found: string[] = [];
    for (const page of pages) {
      const text = await readFile(path.join(repoRoot, page), 'utf8').catch(() => '');
      text.split('\n').forEach((line, index) => {
        // A page that warns against it says "a bare `node`".
        if (bareNode.test(line) && !/a bare `node/i.test(line)) found.push(`${page}:${index + 1}: ${line}`);
      });
    }
    for (const root of sourceRoots) {
      for (const file of await filesUnder(path.join(repoRoot, root), isProductSource)) {
        const text = await readFile(file, 'utf8');
        if (!text.includes('main.ts')) continue;
        for (const literal of literalsOf(file, text)) {
          if (bareNode.test(literal.text))
            found.push(`${path.relative(repoRoot, file)}:${literal.line}: ${literal.text}`);
        }
      }
    }
    expect(found).toEqual([]);
  });

  it('README.md explains the EBADENGINE warnings `npm install` prints on Node 20', async () => {
    const readme = await readFile(path.join(repoRoot, 'README.md'), 'utf8');
    expect(readme).toMatch(/EBADENGINE[\s\S]{0,400}expected/);
  });
});
