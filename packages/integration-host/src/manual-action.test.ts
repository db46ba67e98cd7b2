import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkActTask, requestManualAction } from '@assistant/actions';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadRuntime } from './load-runtime.ts';
import { installation } from './testing/installation.ts';

const greeter = fileURLToPath(new URL('../../../tests/fixtures/integrations/custom/greeter', import.meta.url));

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-manual-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function setup() {
  await writeFile(
    path.join(dir, 'config.yaml'),
    `data_dir: ./data\nintegration_dirs: [${JSON.stringify(greeter)}]\nintegrations:\n  - {type: greeter, name: friendly}\n`,
  );
  const { config, registry } = await loadRuntime({ installation, configPath: path.join(dir, 'config.yaml'), cwd: dir });
  const notes = new FileNoteStore({ root: config.paths.notes });
  const queue = await openFileTaskQueue({
    directory: config.paths.queue,
    dataDirectory: config.paths.dataDir,
    settings: config.queue,
  });
  await notes.create('greeter/friendly/linus.md', { data: { name: 'Linus' } });
  const act = (action: string) =>
    requestManualAction({
      registry,
      notes,
      queue,
      instance: 'friendly',
      platform: 'cards',
      notePath: 'greeter/friendly/linus.md',
      action,
      by: 'cli',
    });
  return { notes, queue, registry, act };
}

describe('requestManualAction', () => {
  it('runs a reversible action by hand each time a person asks: hug, wave, hug again', async () => {
    const { notes, queue, registry, act } = await setup();
    const first = await act('hug');
    await act('wave');
    const again = await act('hug');
    expect(first.enqueued).toEqual([{ key: 'hug', type: 'greeter.cards.act', task: expect.any(String) }]);
    expect(again.skipped).toEqual([]);
    expect(again.enqueued).toEqual([{ key: 'hug', type: 'greeter.cards.act', task: expect.any(String) }]);
    expect(again.enqueued[0]?.task).not.toBe(first.enqueued[0]?.task);
    const task = (await queue.get(again.enqueued[0]?.task ?? ''))?.task;
    expect(task ? await checkActTask({ registry, notes, task }) : 'no task').toBeUndefined();
    // Each time is on the record.
    const taken = (await notes.read('greeter/friendly/linus.md'))?.data.actions_taken as { action: string }[];
    expect(taken.map((entry) => entry.action)).toEqual(['hug', 'wave', 'hug']);
  });

  it('takes an irreversible action by hand once per item', async () => {
    const { act } = await setup();
    expect((await act('send_card')).enqueued).toHaveLength(1);
    const again = await act('send_card');
    expect(again.enqueued).toEqual([]);
    expect(again.skipped).toEqual([{ key: 'send_card', reason: 'already taken' }]);
  });
});
