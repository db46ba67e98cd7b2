// A system.agent loop gets what memory holds that bears on its task, as a chat turn does (docs/memory.md): the
// owner's guidance as the owner's words, facts extracted from mail fenced as data, each with its path.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { loadTestRuntime } from './testing/load-test-runtime.ts';
import { runUntilIdle } from './testing/run-until-idle.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-agent-memory-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sentMessages = z.array(z.looseObject({ role: z.string(), content: z.string().nullable().optional() }));

describe("a system.agent loop's memory", () => {
  it('gets the guidance and facts relevant to its task in its system prompt, fenced by who stands behind them', async () => {
    await using server = await FakeOpenAiServer.start({ replies: [{ text: 'Drafted.' }] });
    await writeFile(
      path.join(dir, 'config.yaml'),
      `data_dir: ./data\nworker: {poll_interval: 50ms}\nmemory: {consolidate: []}\nllms:\n  default: {base_url: "${server.url}", model: fake-model, capabilities: {tools: true}}\n`,
    );
    const notes = path.join(dir, 'data', 'notes');
    await mkdir(path.join(notes, 'guidance'), { recursive: true });
    await mkdir(path.join(notes, 'facts'), { recursive: true });
    await writeFile(
      path.join(notes, 'guidance', 'recruiters.md'),
      '---\ntitle: How I answer recruiters\napplies_to: [recruiter, job offer]\n---\nThank them, say I am not looking, and never give my salary.\n',
    );
    await writeFile(
      path.join(notes, 'facts', 'f-recruiter.md'),
      '---\nid: f-recruiter\nabout: [topic:recruiter]\nsource: email/2026/11/offer.md\ntrust: extracted\nobserved_at: 2026-11-20T10:00:00.000Z\nconfidence: 0.8\nsupersedes: []\n---\nThe recruiter from Umbrella Labs offered a staff engineer job offer.\n',
    );

    const { config, registry, queue } = await loadTestRuntime(dir);
    const enqueued = await queue.enqueue({
      type: 'system.agent',
      source: 'cli',
      payload: { prompt: 'Draft an answer to the recruiter about the job offer.' },
    });
    await runUntilIdle({ config, registry });
    expect((await queue.get(enqueued.status === 'enqueued' ? enqueued.task.id : ''))?.state).toBe('done');

    const system = sentMessages.parse(server.requests[0]?.body.messages)[0]?.content ?? '';
    // The guidance is the owner's words, delimited with its path; the extracted fact is fenced as untrusted data.
    expect(system).toMatch(/<<<OWNER-[0-9a-f]{16} guidance\/recruiters\.md>>>\nHow I answer recruiters\nThank them/);
    expect(system).toMatch(
      /<<<UNTRUSTED-[0-9a-f]{16} facts_f-recruiter\.md>>>\nThe recruiter from Umbrella Labs[\s\S]*\(note facts\/f-recruiter\.md, from email\/2026\/11\/offer\.md\)\n<<<END UNTRUSTED/,
    );
  });
});
