import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isAssistantError } from '@assistant/errors';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentToolNames } from './agent-tool-names.ts';
import { builtinToolNames } from './builtin-tool-names.ts';
import { defaultPersonaName, formatPersonaProblem, loadPersonas, personaNamed } from './load-personas.ts';

let root: string;
let configDir: string;
let notesRoot: string;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-personas-'));
  configDir = path.join(root, 'config');
  notesRoot = path.join(root, 'data', 'notes');
  await mkdir(path.join(configDir, 'personas'), { recursive: true });
  await mkdir(path.join(notesRoot, 'personas'), { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const inConfig = (name: string, text: string) => writeFile(path.join(configDir, 'personas', name), text);
const inNotes = (name: string, text: string) => writeFile(path.join(notesRoot, 'personas', name), text);
const checked = {
  profiles: ['default', 'fast'],
  mcpServers: ['files'],
  knownTools: builtinToolNames,
};
const load = () => loadPersonas({ configDir, notesRoot, ...checked });

describe('loadPersonas', () => {
  it('reads a persona: frontmatter normalised, the body as instructions, defaults filled in', async () => {
    await inConfig(
      'researcher.md',
      `---
description: Finds things out
model: fast
tools:
  allow: [search_notes, read_note, 'files__*', run_code]
  deny: [files__write]
  approve: [fetch]
delegable: [search_notes]
mcp_servers: [files]
max_depth: 2
code_mode: discovery
budget: {max_steps: 12, tokens: 50000, timeout: 10m}
---

You are the researcher.
Cite your notes.
`,
    );
    const { personas, problems } = await load();
    expect(problems).toEqual([]);
    expect(personas.get('researcher')).toEqual({
      name: 'researcher',
      source: 'personas/researcher.md (config)',
      file: path.join(configDir, 'personas', 'researcher.md'),
      description: 'Finds things out',
      instructions: 'You are the researcher.\nCite your notes.',
      profile: 'fast',
      tools: {
        allow: ['search_notes', 'read_note', 'files__*', 'run_code'],
        deny: ['files__write'],
        approve: ['fetch'],
      },
      delegable: ['search_notes'],
      mcpServers: ['files'],
      maxDepth: 2,
      maxChildren: 5,
      codeMode: 'discovery',
      budget: { maxSteps: 12, tokens: 50000, timeoutMs: 600_000 },
    });
  });

  it('refuses a code_mode whose tools do not grant run_code, at the line of the key', async () => {
    await inConfig('coder.md', '---\ntools: {allow: [search_notes]}\ncode_mode: discovery\n---\nYou code.\n');
    const { personas, problems } = await load();
    expect(personas.has('coder')).toBe(false);
    expect(problems.map((problem) => [problem.file, problem.line, problem.key])).toEqual([
      ['personas/coder.md', 3, 'code_mode'],
    ]);
    expect(problems[0]?.message).toContain("code_mode is discovery but the persona's tools do not grant run_code");
  });

  it('gives a persona without frontmatter no tools, nothing to delegate and the default limits', async () => {
    await inNotes('plain.md', 'Just instructions.\n');
    const { personas, problems } = await load();
    expect(problems).toEqual([]);
    expect(personas.get('plain')).toMatchObject({
      source: 'notes/personas/plain.md',
      tools: { allow: [], deny: [], approve: [] },
      delegable: [],
      maxDepth: 3,
      maxChildren: 5,
      codeMode: 'off',
      budget: { maxSteps: 20 },
    });
  });

  it('adds the built-in assistant when no file defines one, without the sub-agent tools', async () => {
    const { personas, problems } = await load();
    expect(problems).toEqual([]);
    const assistant = personas.get(defaultPersonaName);
    expect(assistant).toMatchObject({
      source: 'built in',
      tools: { allow: ['*'], deny: [...agentToolNames], approve: [] },
      delegable: ['*'],
      maxDepth: 3,
      maxChildren: 5,
    });
    expect(assistant?.file).toBeUndefined();
    expect(assistant?.instructions).toMatch(/^You are Assistant, working for your owner/);
  });

  it('uses personas/assistant.md in place of the built-in one, and never falls back when that file is broken', async () => {
    await inConfig('assistant.md', '---\ntools: {allow: [search_notes]}\n---\nMine.\n');
    expect((await load()).personas.get('assistant')).toMatchObject({ instructions: 'Mine.' });
    await inConfig('assistant.md', '---\ntools: {allow: [serch_notes]}\n---\nMine.\n');
    const broken = await load();
    expect(broken.personas.has('assistant')).toBe(false);
    expect(() => personaNamed({ name: 'assistant', loaded: broken })).toThrow(/personas\/assistant\.md:2/);
  });

  it('reports every problem with its file, line and key, and loads the other personas', async () => {
    await inConfig(
      'broken.md',
      `---
model: slow
tools:
  allow: [search_notes, serch_notes, 'notes_*', ghub__issues]
  deny: ['bad pattern']
colour: red
mcp_servers: [files, mail]
max_depth: 11
max_children: 0
budget: {max_steps: 500, timeout: soon}
---
Body.
`,
    );
    await inConfig('good.md', '---\ntools: {allow: [read_note]}\n---\nGood.\n');
    const { personas, problems } = await load();
    expect(personas.has('good')).toBe(true);
    expect(personas.has('broken')).toBe(false);
    // Every problem in one run, names included while other keys are wrong, in the order of the file.
    expect(problems.map((problem) => [problem.file, problem.line, problem.key, problem.persona])).toEqual([
      ['personas/broken.md', 2, 'model', 'broken'],
      ['personas/broken.md', 4, 'tools.allow[1]', 'broken'],
      ['personas/broken.md', 4, 'tools.allow[3]', 'broken'],
      ['personas/broken.md', 5, 'tools.deny[0]', 'broken'],
      ['personas/broken.md', 6, 'colour', 'broken'],
      ['personas/broken.md', 7, 'mcp_servers[1]', 'broken'],
      ['personas/broken.md', 8, 'max_depth', 'broken'],
      ['personas/broken.md', 9, 'max_children', 'broken'],
      ['personas/broken.md', 10, 'budget.max_steps', 'broken'],
      ['personas/broken.md', 10, 'budget.timeout', 'broken'],
    ]);
    expect(problems[4]?.message).toBe('unknown key `colour`');

    await inConfig(
      'broken.md',
      `---
model: slow
tools:
  allow: [search_notes, serch_notes, 'notes_*', ghub__issues, files__read]
mcp_servers: [files, mail]
---
Body.
`,
    );
    const names = await load();
    expect(names.problems.map((problem) => [problem.line, problem.key, problem.message, problem.hint])).toEqual([
      [2, 'model', "unknown LLM profile `slow` (config.yaml's `llms:`)", 'known: default, fast'],
      [4, 'tools.allow[1]', 'unknown tool `serch_notes`', 'did you mean `search_notes`?'],
      [
        4,
        'tools.allow[3]',
        "unknown tool `ghub__issues`: no MCP server `ghub` in config.yaml's `mcp_servers:`",
        'known: files',
      ],
      [5, 'mcp_servers[1]', "unknown MCP server `mail` (config.yaml's `mcp_servers:`)", 'known: files'],
    ]);
    expect(formatPersonaProblem(names.problems[1] ?? { file: '', message: '' })).toBe(
      'personas/broken.md:4: tools.allow[1]: unknown tool `serch_notes`',
    );
  });

  it('checks names only against what it is given', async () => {
    await inConfig('loose.md', '---\nmodel: anything\ntools: {allow: [whatever]}\nmcp_servers: [x]\n---\nHi.\n');
    const { problems, personas } = await loadPersonas({ configDir, notesRoot });
    expect(problems).toEqual([]);
    expect(personas.get('loose')?.tools.allow).toEqual(['whatever']);
  });

  it('reads the files every time: an edit counts at the next load, and a changed copy reaches no other load', async () => {
    await inConfig('helper.md', '---\ntools: {allow: [read_note]}\n---\nFirst.\n');
    const first = await load();
    first.personas.get('helper')?.tools.allow.push('run_code');
    expect((await load()).personas.get('helper')).toMatchObject({
      instructions: 'First.',
      tools: { allow: ['read_note'] },
    });
    await inConfig('helper.md', '---\ntools: {allow: [serch_notes]}\n---\nSecond.\n');
    const broken = await load();
    expect(broken.personas.has('helper')).toBe(false);
    expect(broken.problems.map((problem) => [problem.line, problem.key])).toEqual([[2, 'tools.allow[0]']]);
    // The same file checked against other names is checked again.
    expect((await loadPersonas({ configDir, notesRoot })).personas.get('helper')?.instructions).toBe('Second.');
    await inConfig('helper.md', '---\ntools: {allow: [read_note]}\n---\nThird.\n');
    expect((await load()).personas.get('helper')?.instructions).toBe('Third.');
  });

  it('reports an empty body, unclosed or unparsable frontmatter, and a bad file name', async () => {
    await inConfig('empty.md', '---\ndescription: nothing below\n---\n\n   \n');
    await inConfig('open.md', '---\ndescription: never closed\nBody\n');
    await inConfig('yaml.md', '---\ntools: {allow: [a\n---\nBody\n');
    await inConfig('bad name.md', 'Body\n');
    await inConfig('notes.txt', 'not a persona, ignored');
    await inConfig('.swap.md', 'ignored');
    const { problems, personas } = await load();
    expect(problems.slice(0, 4).map((problem) => [problem.file, problem.line, problem.key])).toEqual([
      ['personas/bad name.md', undefined, '(document)'],
      ['personas/empty.md', 4, '(body)'],
      ['personas/open.md', 1, '(document)'],
      // The YAML's own lines, counted from the top of the file (the frontmatter starts on line 2).
      ['personas/yaml.md', 3, '(document)'],
    ]);
    expect(new Set(problems.slice(3).map((problem) => problem.file))).toEqual(new Set(['personas/yaml.md']));
    expect(problems[0]?.message).toContain('`bad name` is not a valid persona name');
    expect(problems[1]?.message).toContain('body (below the frontmatter) is empty');
    expect([...personas.keys()]).toEqual(['assistant']);
  });

  it('lets the config folder win over the notes for one name, and names both files', async () => {
    await inConfig('writer.md', 'From config.\n');
    await inNotes('writer.md', 'From notes.\n');
    const { personas, problems } = await load();
    expect(personas.get('writer')?.instructions).toBe('From config.');
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ file: 'notes/personas/writer.md', line: 1, persona: 'writer' });
    expect(problems[0]?.message).toContain('personas/writer.md is used and notes/personas/writer.md is ignored');
    // The winner is still usable: the duplicate is the notes file's problem.
    expect(personaNamed({ name: 'writer', loaded: { personas, problems } }).instructions).toBe('From config.');
  });

  it('never rewrites a file, whatever is wrong with it', async () => {
    const text = '---\ncolour: red\n---\n';
    await inConfig('broken.md', text);
    await load();
    const { readFile } = await import('node:fs/promises');
    expect(await readFile(path.join(configDir, 'personas', 'broken.md'), 'utf8')).toBe(text);
  });

  it('works when neither folder exists', async () => {
    const { personas, problems } = await loadPersonas({
      configDir: path.join(root, 'nowhere'),
      notesRoot: path.join(root, 'nowhere-either'),
    });
    expect(problems).toEqual([]);
    expect([...personas.keys()]).toEqual(['assistant']);
  });
});

describe('personaNamed', () => {
  it('throws PERSONA_UNKNOWN naming the personas there are', async () => {
    await inConfig('researcher.md', 'Research.\n');
    const loaded = await load();
    let caught: unknown;
    try {
      personaNamed({ name: 'reseacher', loaded });
    } catch (error) {
      caught = error;
    }
    if (!isAssistantError(caught)) throw new Error('expected an AssistantError');
    expect(caught.code).toBe('PERSONA_UNKNOWN');
    expect(caught.message).toBe('no persona `reseacher`; the personas are assistant, researcher');
    expect(caught.hint).toContain('did you mean `researcher`?');
  });

  it('throws PERSONA_INVALID naming the file, line and key', async () => {
    await inConfig('researcher.md', '---\nmax_depth: 99\n---\nResearch.\n');
    const loaded = await load();
    let caught: unknown;
    try {
      personaNamed({ name: 'researcher', loaded });
    } catch (error) {
      caught = error;
    }
    if (!isAssistantError(caught)) throw new Error('expected an AssistantError');
    expect(caught.code).toBe('PERSONA_INVALID');
    expect(caught.message).toBe(
      'persona `researcher` cannot be used: personas/researcher.md:2: max_depth: must be at most 10, got `99` (number)',
    );
  });
});
