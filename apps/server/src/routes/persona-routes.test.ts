import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type LoadedRuntime, loadRuntime } from '@assistant/integration-host';
import { installation } from '@assistant/process';
import type { InjectOptions } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../create-server.ts';
import type { AssistantServer } from '../server-type.ts';

const token = 'test-token-for-the-persona-routes-0123456789';

let dir: string;
let runtime: LoadedRuntime;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-persona-routes-'));
  await writeFile(
    path.join(dir, 'config.yaml'),
    'data_dir: ./data\nserver:\n  port: 0\nllms:\n  default:\n    base_url: http://127.0.0.1:9/v1\n    model: nothing\n',
  );
  await mkdir(path.join(dir, 'personas'));
  await writeFile(
    path.join(dir, 'personas', 'researcher.md'),
    '---\ndescription: Finds things out\ntools: {allow: [search_notes, read_note]}\ndelegable: [read_note]\n---\nYou research.\n',
  );
  await mkdir(path.join(dir, 'data', 'notes', 'personas'), { recursive: true });
  await writeFile(path.join(dir, 'data', 'notes', 'personas', 'broken.md'), '---\nmax_depth: 40\n---\nBody.\n');
  runtime = await loadRuntime({ installation, configPath: path.join(dir, 'config.yaml'), cwd: dir });
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function server(): Promise<AssistantServer> {
  const app = createServer({ config: runtime.config, registry: runtime.registry, token });
  await app.ready();
  return app;
}

function inject(app: AssistantServer, options: InjectOptions) {
  return app.inject({ ...options, headers: { authorization: `Bearer ${token}`, ...options.headers } });
}

describe('/api/personas', () => {
  it('lists every persona, the broken one with usable: false and its problems at file, line and key', async () => {
    await using app = await server();
    const list = await inject(app, { method: 'GET', url: '/api/personas' });
    expect(list.statusCode).toBe(200);
    const body = list.json();
    expect(body.personas.map((persona: { name: string; usable: boolean }) => [persona.name, persona.usable])).toEqual([
      ['assistant', true],
      ['broken', false],
      ['researcher', true],
    ]);
    expect(body.personas[1].problems).toEqual([
      {
        file: 'notes/personas/broken.md',
        line: 2,
        col: 12,
        key: 'max_depth',
        message: 'must be at most 10, got `40` (number)',
      },
    ]);
    expect(body.problems).toEqual([]);
  });

  it('shows one persona normalised, reads an edit without a restart, and 404s an unknown one', async () => {
    await using app = await server();
    const one = await inject(app, { method: 'GET', url: '/api/personas/researcher' });
    expect(one.statusCode).toBe(200);
    expect(one.json().persona).toEqual({
      name: 'researcher',
      source: 'personas/researcher.md (config)',
      description: 'Finds things out',
      tools: { allow: ['search_notes', 'read_note'], deny: [], approve: [] },
      delegable: ['read_note'],
      mcp_servers: [],
      max_depth: 3,
      max_children: 5,
      budget: { max_steps: 20 },
      instructions: 'You research.',
      usable: true,
      problems: [],
    });
    await writeFile(path.join(dir, 'personas', 'researcher.md'), 'You research harder.\n');
    const edited = await inject(app, { method: 'GET', url: '/api/personas/researcher' });
    expect(edited.json().persona.instructions).toBe('You research harder.');

    const missing = await inject(app, { method: 'GET', url: '/api/personas/nobody' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error).toEqual({
      code: 'PERSONA_UNKNOWN',
      message: 'no persona `nobody`; the personas are assistant, researcher',
    });
    const bad = await inject(app, { method: 'GET', url: '/api/personas/no%20body' });
    expect(bad.statusCode).toBe(400);
  });
});
