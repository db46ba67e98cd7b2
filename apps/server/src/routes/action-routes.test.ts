import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkActTask, listApprovals, readApproval } from '@assistant/actions';
import { loadRuntime } from '@assistant/integration-host';
import { FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { openFileTaskQueue } from '@assistant/queue';
import type { InjectOptions } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../create-server.ts';
import { catalogFromRegistry } from '../server-catalog.ts';
import type { AssistantServer } from '../server-type.ts';

const greeter = fileURLToPath(new URL('../../../../tests/fixtures/integrations/custom/greeter', import.meta.url));

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-actions-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const token = 'test-token-for-the-action-routes-0123456789';

/** `app.inject` with the API token. */
function inject(app: AssistantServer, options: InjectOptions) {
  return app.inject({ ...options, headers: { authorization: `Bearer ${token}`, ...options.headers } });
}

async function setup() {
  await cp(greeter, path.join(dir, 'greeter'), { recursive: true });
  await writeFile(
    path.join(dir, 'config.yaml'),
    `data_dir: ./data\nintegration_dirs: [./greeter]\nintegrations:\n  - {type: greeter, name: friendly}\n`,
  );
  const { config, registry } = await loadRuntime({ installation, configPath: path.join(dir, 'config.yaml'), cwd: dir });
  const notes = new FileNoteStore({ root: config.paths.notes });
  await notes.create('greeter/friendly/linus.md', { data: { name: 'Linus' } });
  const app = createServer({ config, registry, catalog: catalogFromRegistry(registry), token });
  await app.ready();
  const queue = await openFileTaskQueue({
    directory: config.paths.queue,
    dataDirectory: config.paths.dataDir,
    settings: config.queue,
  });
  return { app, notes, queue, registry };
}

describe('POST /api/actions', () => {
  it('hole 1: an action by hand is an approval approved by api, and only its act task passes the gate, not a POST /api/tasks', async () => {
    const { app, notes, queue, registry } = await setup();
    await using _app = app;
    const response = await inject(app, {
      method: 'POST',
      url: '/api/actions',
      payload: { instance: 'friendly', platform: 'cards', note: 'greeter/friendly/linus.md', action: 'send_card' },
    });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body).toMatchObject({
      status: 'approved',
      provenance: 'manual',
      decided_by: 'api',
      item: 'greeter/friendly/linus.md',
      title: 'Linus',
      enqueued: [{ key: 'send_card', type: 'greeter.cards.act' }],
      skipped: [],
    });
    expect(await readApproval(notes, body.id)).toMatchObject({ status: 'approved', provenance: 'manual' });
    const task = (await queue.get(body.enqueued[0].task))?.task;
    expect(task?.payload).toMatchObject({ approval: body.id, provenance: 'manual', item: 'greeter/friendly/linus.md' });
    expect(task ? await checkActTask({ registry, notes, task }) : 'no task').toBeUndefined();

    // The same act payload as a plain task, without the approval: the gate refuses it whatever its source says.
    const { approval: _cited, ...uncited } = (task?.payload ?? {}) as Record<string, never>;
    const forged = await inject(app, {
      method: 'POST',
      url: '/api/tasks',
      payload: { type: 'greeter.cards.act', payload: uncited },
    });
    expect(forged.statusCode).toBe(201);
    const forgedTask = (await queue.get(forged.json().id))?.task;
    expect(forgedTask?.source).toBe('api');
    expect(
      forgedTask ? await checkActTask({ registry, notes, task: { ...forgedTask, integration: 'friendly' } }) : '',
    ).toMatch(/^`send_card` cannot be undone, and nothing authorises it/);

    // Taken once per item, by hand too.
    const again = await inject(app, {
      method: 'POST',
      url: '/api/actions',
      payload: { instance: 'friendly', platform: 'cards', note: 'greeter/friendly/linus.md', action: 'send_card' },
    });
    expect(again.json()).toMatchObject({ enqueued: [], skipped: [{ key: 'send_card', reason: 'already taken' }] });
  });

  it('checks the instance, the platform, the action, its argument and the note', async () => {
    const { app, notes } = await setup();
    await using _app = app;
    const post = (payload: Record<string, unknown>) =>
      inject(app, {
        method: 'POST',
        url: '/api/actions',
        payload: {
          instance: 'friendly',
          platform: 'cards',
          note: 'greeter/friendly/linus.md',
          action: 'hug',
          ...payload,
        },
      });
    const cases: [Record<string, unknown>, number, RegExp][] = [
      [{ instance: 'nobody' }, 404, /no integration instance `nobody`/],
      [{ platform: 'letters' }, 404, /has no platform `letters`/],
      [{ action: 'kiss' }, 400, /`kiss` is not an action of greeter\.cards; its actions: wave, hug, send_card/],
      [{ argument: 'tight' }, 400, /`hug` takes no argument/],
      [{ note: 'greeter/friendly/nobody.md' }, 404, /no note greeter\/friendly\/nobody\.md/],
      [{ note: '../outside.md' }, 400, /./],
      // Another instance's item, and a note that is no instance's: refused before anything is written.
      [
        { note: 'greeter/other/x.md' },
        400,
        /greeter\/other\/x\.md is not an item of friendly: its items are under greeter\/friendly\//,
      ],
      [{ note: 'elsewhere/x.md' }, 400, /elsewhere\/x\.md is not an item of friendly/],
    ];
    for (const [payload, status, message] of cases) {
      const response = await post(payload);
      expect({ payload, status: response.statusCode }).toEqual({ payload, status });
      expect(response.json().error.message).toMatch(message);
    }
    expect((await post({})).statusCode).toBe(201);
    // Only the one accepted request left an approval.
    expect((await listApprovals(notes)).map((approval) => approval.item)).toEqual(['greeter/friendly/linus.md']);
  });
});
