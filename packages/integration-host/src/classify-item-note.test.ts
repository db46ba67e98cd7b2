import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createScriptedModel } from '@assistant/agent/testing';
import { fenceUntrusted } from '@assistant/llm';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { classifyItemNote } from './classify-item-note.ts';
import type { HandlerContext } from './handler-context.ts';
import { enqueueConsolidation, type MemoryContext, memoryInstanceOf } from './memory-context.ts';
import { fakeMemory } from './testing/fake-memory.ts';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'classify-memory-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function classify(domain: string, memory: MemoryContext | undefined) {
  const notes = new FileNoteStore({ root });
  const note = `${domain}/work/item.md`;
  await notes.create(note, { data: { subject: 'Hello', content_hash: 'h1' }, body: 'Can we meet on Friday?' });
  const enqueued: unknown[] = [];
  const context = {
    payload: { note },
    notes,
    task: { id: '01jclassify0000000000000000' },
    instance: { name: 'work', domain, settings: {}, llm: 'default' },
    platform: { classifications: {} },
    signal: new AbortController().signal,
    llm: () => createScriptedModel({ replies: ['{}'] }),
    enqueue: async (options: unknown) => {
      enqueued.push(options);
      return { status: 'enqueued' };
    },
    ...(memory === undefined ? {} : { memory }),
  } as unknown as HandlerContext<unknown, unknown>;
  await classifyItemNote(context, () => ({ role: 'You classify.', fenced: fenceUntrusted({ body: 'x' }) }));
  return { enqueued, note };
}

describe('classifyItemNote and memory', () => {
  it('enqueues memory.consolidate {note} for the memory instance after evaluate, when memory.consolidate names the domain', async () => {
    const { enqueued, note } = await classify('email', fakeMemory({ consolidate: ['email'] }));
    expect(enqueued).toEqual([
      { stage: 'evaluate', payload: { note } },
      { type: 'memory.consolidate', payload: { note }, integration: 'memory' },
    ]);
  });

  it('does not when the domain is not named, consolidation is off, or the worker has no memory', async () => {
    for (const memory of [fakeMemory({ consolidate: ['chat'] }), fakeMemory({ consolidate: [] }), undefined]) {
      const { enqueued } = await classify('github', memory);
      expect(enqueued).toHaveLength(1);
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('enqueueConsolidation', () => {
  const recorder = () => {
    const enqueued: unknown[] = [];
    const said: string[] = [];
    return {
      enqueued,
      said,
      enqueue: async (options: unknown) => {
        enqueued.push(options);
      },
      logger: { info: (message: string) => said.push(message) },
    };
  };

  it('goes to the instance that runs memory, whatever config.yaml names it, for a note or a chat message', async () => {
    const context = { ...recorder(), memory: { ...fakeMemory({ consolidate: ['email', 'chat'] }), instance: 'mem' } };
    await enqueueConsolidation(context, { domain: 'email', notePath: 'email/a.md' });
    await enqueueConsolidation(context, { domain: 'chat', conversation: 'c-1', message: 'm-1' });
    expect(context.enqueued).toEqual([
      { type: 'memory.consolidate', payload: { note: 'email/a.md' }, integration: 'mem' },
      { type: 'memory.consolidate', payload: { conversation: 'c-1', message: 'm-1' }, integration: 'mem' },
    ]);
  });

  it('enqueues nothing when no memory instance is enabled, and says so once', async () => {
    const memory = { ...fakeMemory({ consolidate: ['email'] }), instance: null };
    const context = { ...recorder(), memory };
    expect(await enqueueConsolidation(context, { domain: 'email', notePath: 'email/a.md' })).toBe(false);
    expect(await enqueueConsolidation(context, { domain: 'email', notePath: 'email/b.md' })).toBe(false);
    expect(context.enqueued).toEqual([]);
    expect(context.said).toHaveLength(1);
    expect(context.said[0]).toContain('no enabled instance of the memory integration');
  });

  it('picks the first enabled instance of the memory integration', () => {
    const instances = [
      { name: 'mail', domain: 'email', enabled: true },
      { name: 'off', domain: 'memory', enabled: false },
      { name: 'keeper', domain: 'memory', enabled: true },
    ];
    expect(memoryInstanceOf(instances)).toBe('keeper');
    expect(memoryInstanceOf(instances.slice(0, 2))).toBeNull();
  });
});
