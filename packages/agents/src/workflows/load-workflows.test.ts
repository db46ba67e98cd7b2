import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadWorkflows } from './load-workflows.ts';

let configDir: string;
const personas = new Set(['researcher', 'writer', 'editor', 'manager']);

beforeEach(async () => {
  configDir = await mkdtemp(path.join(os.tmpdir(), 'assistant-workflows-'));
  await mkdir(path.join(configDir, 'agents'));
});

afterEach(async () => {
  await rm(configDir, { recursive: true, force: true });
});

async function write(files: Record<string, string>) {
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(configDir, 'agents', name), text);
}

const load = () => loadWorkflows({ configDir, personas });

describe('loadWorkflows', () => {
  it('reads the three topologies with their defaults', async () => {
    await write({
      'review.yaml': [
        'topology: pipeline',
        'description: research, then write',
        'steps:',
        '  - persona: researcher',
        '    task: "Find facts about {{input}}"',
        '  - persona: writer',
        '  - workflow: polish',
        '',
      ].join('\n'),
      'polish.yaml': 'topology: pipeline\nsteps:\n  - {persona: editor, task: "Polish: {{previous}}"}\n',
      'team.yaml': 'topology: star\nsupervisor: manager\nworkers: [researcher, writer]\ntask: "Plan {{input}}"\n',
      'debate.yaml': 'topology: mesh\nagents: [researcher, writer]\nstop_when: AGREED\n',
    });
    const { workflows, problems } = await load();
    expect(problems).toEqual([]);
    expect([...workflows.keys()]).toEqual(['debate', 'polish', 'review', 'team']);
    expect(workflows.get('review')).toEqual({
      name: 'review',
      file: 'agents/review.yaml',
      description: 'research, then write',
      topology: 'pipeline',
      steps: [
        { kind: 'agent', persona: 'researcher', task: 'Find facts about {{input}}' },
        { kind: 'agent', persona: 'writer', task: '{{previous}}' },
        { kind: 'workflow', workflow: 'polish' },
      ],
    });
    expect(workflows.get('team')).toMatchObject({ supervisor: 'manager', workers: ['researcher', 'writer'] });
    expect(workflows.get('debate')).toMatchObject({ maxRounds: 3, stopWhen: 'AGREED', task: '{{input}}' });
  });

  it('reports an unknown persona at its line, with the nearest name', async () => {
    await write({ 'review.yaml': 'topology: pipeline\nsteps:\n  - persona: researcher\n  - persona: writter\n' });
    const { workflows, problems } = await load();
    expect(workflows.size).toBe(0);
    expect(problems).toEqual([
      expect.objectContaining({
        file: 'agents/review.yaml',
        line: 4,
        key: 'steps[1].persona',
        message: 'unknown persona `writter`',
        hint: 'did you mean `writer`?',
        workflow: 'review',
      }),
    ]);
  });

  it('reports an unknown persona among star workers and mesh agents', async () => {
    await write({
      'team.yaml': 'topology: star\nsupervisor: boss\nworkers:\n  - researcher\n  - nobody\n',
      'debate.yaml': 'topology: mesh\nagents: [writer, ghost]\n',
    });
    const { problems } = await load();
    expect(problems.map(({ file, line, key, message }) => ({ file, line, key, message }))).toEqual([
      { file: 'agents/debate.yaml', line: 2, key: 'agents[1]', message: 'unknown persona `ghost`' },
      { file: 'agents/team.yaml', line: 2, key: 'supervisor', message: 'unknown persona `boss`' },
      { file: 'agents/team.yaml', line: 5, key: 'workers[1]', message: 'unknown persona `nobody`' },
    ]);
  });

  it('reports a persona listed twice among mesh agents', async () => {
    await write({ 'debate.yaml': 'topology: mesh\nagents:\n  - writer\n  - editor\n  - writer\n' });
    const { problems } = await load();
    expect(problems).toEqual([
      expect.objectContaining({ line: 5, key: 'agents[2]', message: 'persona `writer` is listed twice in `agents`' }),
    ]);
  });

  it('reports an unknown topology at its value', async () => {
    await write({ 'x.yaml': 'description: d\ntopology: pipline\n' });
    const { problems } = await load();
    expect(problems).toEqual([
      expect.objectContaining({
        line: 2,
        col: 11,
        key: 'topology',
        message: 'unknown topology `pipline`: expected pipeline, star or mesh',
        hint: 'did you mean `pipeline`?',
      }),
    ]);
  });

  it('reports a missing topology and a file that is not a mapping', async () => {
    await write({ 'a.yaml': 'steps: []\n', 'b.yaml': '- one\n' });
    const { problems } = await load();
    expect(problems.map(({ file, line, message }) => ({ file, line, message }))).toEqual([
      { file: 'agents/a.yaml', line: 1, message: 'a workflow needs `topology:`: pipeline, star or mesh' },
      {
        file: 'agents/b.yaml',
        line: 1,
        message: 'expected one workflow: a mapping with `topology:` (pipeline, star or mesh) and its keys',
      },
    ]);
  });

  it('reports unknown keys at the key, naming the topology a key belongs to', async () => {
    await write({
      'x.yaml': 'topology: star\nsupervisor: manager\nworkers: [writer]\nsteps: []\ntaks: "{{input}}"\n',
    });
    const { problems } = await load();
    expect(problems).toEqual([
      expect.objectContaining({
        line: 4,
        col: 1,
        key: 'steps',
        message: 'unknown key `steps`',
        hint: '`steps` belongs to topology pipeline; a star takes `supervisor`, `workers`, `task`',
      }),
      expect.objectContaining({ line: 5, key: 'taks', message: 'unknown key `taks`', hint: 'did you mean `task`?' }),
    ]);
  });

  it('reports an unknown key in a step and a step that is both kinds', async () => {
    await write({
      'x.yaml': 'topology: pipeline\nsteps:\n  - persona: writer\n    tsk: hi\n  - persona: writer\n    workflow: y\n',
    });
    const { problems } = await load();
    expect(problems.map(({ line, key, message }) => ({ line, key, message }))).toEqual([
      { line: 4, key: 'steps[0].tsk', message: 'unknown key `tsk` in a step' },
      { line: 5, key: 'steps[1]', message: 'a step is either `{persona, task}` or `{workflow}`, not both' },
    ]);
  });

  it('reports an unknown placeholder, and {{previous}} outside a pipeline', async () => {
    await write({
      'p.yaml': 'topology: pipeline\nsteps:\n  - persona: writer\n    task: "{{ inptu }}"\n',
      'm.yaml': 'topology: mesh\nagents: [writer]\ntask: "{{previous}}"\n',
    });
    const { problems } = await load();
    expect(problems.map(({ file, line, message }) => ({ file, line, message }))).toEqual([
      { file: 'agents/m.yaml', line: 3, message: 'unknown placeholder `{{previous}}`' },
      { file: 'agents/p.yaml', line: 4, message: 'unknown placeholder `{{inptu}}`' },
    ]);
  });

  it('reports max_rounds out of range and an empty stop_when', async () => {
    await write({ 'm.yaml': 'topology: mesh\nagents: [writer]\nmax_rounds: 21\nstop_when: ""\n' });
    const { problems } = await load();
    expect(problems.map(({ line, key, message }) => ({ line, key, message }))).toEqual([
      { line: 3, key: 'max_rounds', message: '`max_rounds` is a whole number from 1 to 20, got `21` (number)' },
      {
        line: 4,
        key: 'stop_when',
        message: '`stop_when` is the text that ends the mesh; an empty one would end it at once',
      },
    ]);
  });

  it('reports a cycle through workflow steps, naming it, and what depends on it', async () => {
    await write({
      'a.yaml': 'topology: pipeline\nsteps:\n  - persona: writer\n  - workflow: b\n',
      'b.yaml': 'topology: pipeline\nsteps:\n  - workflow: a\n',
      'c.yaml': 'topology: pipeline\nsteps:\n  - workflow: a\n',
      'd.yaml': 'topology: pipeline\nsteps:\n  - workflow: d\n',
      'ok.yaml': 'topology: pipeline\nsteps:\n  - persona: writer\n',
    });
    const { workflows, problems } = await load();
    expect([...workflows.keys()]).toEqual(['ok']);
    expect(problems.map(({ file, line, key, message }) => ({ file, line, key, message }))).toEqual([
      { file: 'agents/a.yaml', line: 4, key: 'steps[1].workflow', message: 'a cycle of nested workflows: a → b → a' },
      { file: 'agents/b.yaml', line: 3, key: 'steps[0].workflow', message: 'a cycle of nested workflows: b → a → b' },
      {
        file: 'agents/c.yaml',
        line: 3,
        key: 'steps[0].workflow',
        message: 'names workflow `a`, which is in a cycle of nested workflows',
      },
      { file: 'agents/d.yaml', line: 3, key: 'steps[0].workflow', message: 'a cycle of nested workflows: d → d' },
    ]);
  });

  it('reports a nested workflow that is missing, or that has problems of its own', async () => {
    await write({
      'a.yaml': 'topology: pipeline\nsteps:\n  - workflow: nowhere\n',
      'b.yaml': 'topology: pipeline\nsteps:\n  - persona: writer\n  - workflow: c\n',
      'c.yaml': 'topology: mesh\nagents: [ghost]\n',
    });
    const { workflows, problems } = await load();
    expect(workflows.size).toBe(0);
    expect(problems.map(({ file, line, message }) => ({ file, line, message }))).toEqual([
      { file: 'agents/a.yaml', line: 3, message: 'names workflow `nowhere`, which does not exist' },
      { file: 'agents/b.yaml', line: 4, message: 'names workflow `c`, which does not load (see its problems)' },
      { file: 'agents/c.yaml', line: 2, message: 'unknown persona `ghost`' },
    ]);
  });

  it('reports YAML syntax, a .yml file and a bad file name, and loads the rest', async () => {
    await write({
      'broken.yaml': 'topology: pipeline\nsteps: [\n',
      'old.yml': 'topology: mesh\n',
      'Bad Name.yaml': 'topology: mesh\nagents: [writer]\n',
      'fine.yaml': 'topology: mesh\nagents: [writer]\n',
    });
    const { workflows, problems } = await load();
    expect([...workflows.keys()]).toEqual(['fine']);
    expect(problems.map(({ file }) => file)).toEqual(['agents/Bad Name.yaml', 'agents/broken.yaml', 'agents/old.yml']);
    expect(problems[1]?.message).toMatch(/^YAML syntax/);
    expect(problems[1]?.line).toBeGreaterThan(0);
  });

  it('has no workflows and no problems without an agents folder', async () => {
    await rm(path.join(configDir, 'agents'), { recursive: true });
    expect(await load()).toEqual({ workflows: new Map(), problems: [] });
  });
});
