import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type LoadedRuntime, loadRuntime } from '@assistant/integration-host';
import { installation } from '@assistant/process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../../create-server.ts';
import type { AssistantServer } from '../../server-type.ts';

const token = 'dashboard-test-token-personas-0123456789a';
const authorization = `Bearer ${token}`;
const script = '<script>alert(1)</script>';

let dir: string;
let runtime: LoadedRuntime;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-personas-page-'));
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  await mkdir(path.join(dir, 'personas'));
  await writeFile(
    path.join(dir, 'personas', 'researcher.md'),
    `---\ndescription: "finds <b>things</b>"\ntools: {allow: [search_notes, read_note], approve: [read_note]}\ndelegable: [search_notes]\nmax_children: 2\nbudget: {max_steps: 8, timeout: 10m}\n---\nYou research. ${script}\n`,
  );
  await mkdir(path.join(dir, 'data', 'notes', 'personas'), { recursive: true });
  await writeFile(path.join(dir, 'data', 'notes', 'personas', 'broken.md'), '---\ncolour: red\n---\nBody.\n');
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

describe('the Personas page', () => {
  it('lists each persona with its grants, delegable, limits and problems, linked from the navigation', async () => {
    await using app = await server();
    const page = await app.inject({ method: 'GET', url: '/personas', headers: { authorization } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('href="/personas"');
    expect(page.body).toContain('<a href="/personas/researcher">researcher</a>');
    expect(page.body).toContain('allow search_notes, read_note; approve read_note');
    expect(page.body).toContain('depth 3, children 2, budget 8 steps, 10m');
    expect(page.body).toContain('<a href="/personas/assistant">assistant</a>');
    expect(page.body).toContain('<a href="/personas/broken">broken</a>');
    expect(page.body).toContain('1 problem(s)</strong> (cannot be used)');
  });

  it('shows one persona with its instructions escaped, a broken one with its problems, and 404s an unknown one', async () => {
    await using app = await server();
    const one = await app.inject({ method: 'GET', url: '/personas/researcher', headers: { authorization } });
    expect(one.statusCode).toBe(200);
    expect(one.body).toContain('finds &lt;b&gt;things&lt;/b&gt;');
    expect(one.body).toContain('You research. &lt;script&gt;');
    expect(one.body).not.toContain(script);
    expect(one.body).toContain('<dt>Delegable (what a child may receive)</dt><dd><code>search_notes</code></dd>');

    const broken = await app.inject({ method: 'GET', url: '/personas/broken', headers: { authorization } });
    expect(broken.statusCode).toBe(200);
    expect(broken.body).toContain('This persona cannot be used');
    expect(broken.body).toContain('<code>notes/personas/broken.md:2</code> <code>colour</code>: unknown key `colour`');

    const missing = await app.inject({ method: 'GET', url: '/personas/nobody', headers: { authorization } });
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toContain('no persona `nobody`');
  });

  it("puts the persona files' problems on the Config page, read again at each request, without calling the server broken", async () => {
    await using app = await server();
    const page = await app.inject({ method: 'GET', url: '/config', headers: { authorization } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('The persona files have 1 problem(s). The server runs;');
    expect(page.body).toContain('unknown key `colour`');
    expect(page.body).not.toContain('the server could not start with it');
    await writeFile(path.join(dir, 'data', 'notes', 'personas', 'broken.md'), 'Fixed.\n');
    const fixed = await app.inject({ method: 'GET', url: '/config', headers: { authorization } });
    expect(fixed.body).not.toContain('id="persona-problems"');
  });
});
