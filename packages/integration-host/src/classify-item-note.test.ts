import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createScriptedModel } from '@assistant/agent/testing';
import { fenceUntrusted } from '@assistant/llm';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { classifyItemNote } from './classify-item-note.ts';
import type { HandlerContext } from './handler-context.ts';
import type { MemoryContext } from './memory-context.ts';
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
