import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import type { IntegrationRegistry } from '@assistant/integration-host';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configuredChatService } from './chat-service.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-chat-service-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A registry that knows only the `chat` instance, with these settings. */
function registryWith(settings: Record<string, unknown>): IntegrationRegistry {
  return { instance: (name: string) => (name === 'chat' ? { settings } : undefined) } as unknown as IntegrationRegistry;
}

describe('configuredChatService', () => {
  it("gives new conversations the chat instance's mode, and warns about one that is not a mode", async () => {
    await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\n');
    const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
    const enqueued: unknown[] = [];
    const queue = {
      enqueue: async (request: unknown) => {
        enqueued.push(request);
        return { status: 'enqueued' };
      },
    };
    const warnings: string[] = [];
    const make = (settings: Record<string, unknown>) =>
      configuredChatService({
        config,
        notes: new FileNoteStore({ root: config.paths.notes }),
        queue: queue as never,
        registry: registryWith(settings),
        warn: (message) => warnings.push(message),
      });

    const collecting = make({ mode: 'collect' });
    expect((await collecting.create({})).mode).toBe('collect');
    expect(warnings).toEqual([]);

    const shouting = make({ mode: 'shout' });
    expect(warnings).toEqual([
      'integration instance `chat`: setting `mode` is "shout", not one of steer, followup, collect, interrupt; new conversations use followup',
    ]);
    const { id } = await shouting.create({});
    expect((await shouting.get(id)).mode).toBe('followup');
    await shouting.post(id, { text: 'hello' });
    expect(enqueued).toEqual([expect.objectContaining({ type: 'chat.turn', integration: 'chat', priority: 1 })]);
  });

  it("records the chat instance's persona on new conversations, and warns about one that is not a persona name", async () => {
    await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\n');
    const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
    const warnings: string[] = [];
    const make = (settings: Record<string, unknown>) =>
      configuredChatService({
        config,
        notes: new FileNoteStore({ root: config.paths.notes }),
        queue: { enqueue: async () => ({ status: 'enqueued' }) } as never,
        registry: registryWith(settings),
        warn: (message) => warnings.push(message),
      });
    expect((await make({}).create({})).persona).toBe('assistant');
    expect((await make({ persona: 'researcher' }).create({})).persona).toBe('researcher');
    expect(warnings).toEqual([]);
    expect((await make({ persona: '../x' }).create({})).persona).toBe('assistant');
    expect(warnings).toEqual([
      'integration instance `chat`: setting `persona` is "../x", not a persona name (letters, digits, _ and -); new conversations use assistant',
    ]);
  });
});
