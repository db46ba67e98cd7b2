// `assistant personas ls|show` and `assistant config check` through the real command, over real persona files.
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const researcher = `---
description: Finds things out in the notes
model: fast
tools:
  allow: [search_notes, read_note]
  approve: [read_note]
delegable: [search_notes]
max_children: 2
budget: {max_steps: 8, timeout: 10m}
---
You are the researcher. Cite the notes you used.
`;

async function setup(): Promise<TempDir> {
  const dir = await tempDir();
  await dir.write(
    'config.yaml',
    'data_dir: ./data\nllms:\n  default: {base_url: "http://127.0.0.1:9/v1", model: m}\n  fast: {base_url: "http://127.0.0.1:9/v1", model: m}\n',
  );
  await dir.write('personas/researcher.md', researcher);
  await dir.write('data/notes/personas/scribble.md', '---\ntools: {allow: [serch_notes]}\ncolour: red\n---\nWrite.\n');
  return dir;
}

describe('assistant personas', () => {
  it('lists each persona with its source, model and tools, the broken one flagged with file, line and key', async () => {
    await using dir = await setup();
    const cli = (args: string[]) => runCli(args, { cwd: dir.path });

    const listed = await cli(['personas', 'ls']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(
      'assistant  built in  model: default\n  tools: allow *; deny spawn_agent, message_agent, wait_agents, list_agents, reply_to_caller\n  delegable: *\n',
    );
    expect(listed.stdout).toContain(
      'researcher  personas/researcher.md (config)  model: fast\n  tools: allow search_notes, read_note; approve read_note\n  delegable: search_notes\n',
    );
    expect(listed.stdout).toContain('scribble  notes/personas/scribble.md  BROKEN (cannot be used)  2 problem(s)\n');
    expect(listed.stdout).toContain('  notes/personas/scribble.md:2:17: tools.allow[0]: unknown tool `serch_notes`\n');
    expect(listed.stdout).toContain('  notes/personas/scribble.md:3:1: colour: unknown key `colour`\n');

    const json = JSON.parse((await cli(['personas', 'ls', '--json'])).stdout) as {
      personas: { name: string; usable: boolean; problems: { file: string; line: number; key: string }[] }[];
    };
    expect(json.personas.map((persona) => [persona.name, persona.usable])).toEqual([
      ['assistant', true],
      ['researcher', true],
      ['scribble', false],
    ]);
    expect(json.personas[2]?.problems.map((problem) => [problem.file, problem.line, problem.key])).toEqual([
      ['notes/personas/scribble.md', 2, 'tools.allow[0]'],
      ['notes/personas/scribble.md', 3, 'colour'],
    ]);
  });

  it('shows one persona with its defaults filled in and its instructions, as text and as JSON', async () => {
    await using dir = await setup();
    const cli = (args: string[]) => runCli(args, { cwd: dir.path });

    const shown = await cli(['personas', 'show', 'researcher']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('  max_depth:    3\n  max_children: 2\n  budget:       max_steps 8, timeout 10m\n');
    expect(shown.stdout).toContain('\nYou are the researcher. Cite the notes you used.\n');

    const json = JSON.parse((await cli(['personas', 'show', 'researcher', '--json'])).stdout);
    expect(json.persona).toEqual({
      name: 'researcher',
      source: 'personas/researcher.md (config)',
      description: 'Finds things out in the notes',
      model: 'fast',
      tools: { allow: ['search_notes', 'read_note'], deny: [], approve: ['read_note'] },
      delegable: ['search_notes'],
      mcp_servers: [],
      max_depth: 3,
      max_children: 2,
      budget: { max_steps: 8, timeout_ms: 600_000 },
      instructions: 'You are the researcher. Cite the notes you used.',
      usable: true,
      problems: [],
    });

    const unknown = await cli(['personas', 'show', 'reseacher']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no persona `reseacher`; the personas are assistant, researcher');
    expect(unknown.stderr).toContain('did you mean `researcher`?');
  });

  it('makes config check fail on the broken persona, naming its file, line and key', async () => {
    await using dir = await setup();
    const checked = await runCli(['config', 'check'], { cwd: dir.path });
    expect(checked.code).toBe(2);
    expect(checked.stderr).toContain(
      'data/notes/personas/scribble.md:2:17: tools.allow[0]: unknown tool `serch_notes`',
    );
    expect(checked.stderr).toContain('data/notes/personas/scribble.md:3:1: colour: unknown key `colour`');
  });
});
