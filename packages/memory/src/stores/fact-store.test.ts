import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { extractedFactId, type FactStore, factStore } from './fact-store.ts';

let root: string;
let facts: FactStore;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-facts-'));
  facts = factStore({ notes: new FileNoteStore({ root }) });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('FactStore', () => {
  it('gives an extracted fact an id of its source and statement, so adding it again writes nothing new', async () => {
    const fact = {
      statement: 'The dentist appointment is on Thursday.',
      about: ['topic:dentist'],
      source: 'email/i/1.md',
      trust: 'extracted' as const,
      observedAt: '2026-11-01T10:00:00.000Z',
    };
    const first = await facts.add(fact);
    expect(first.id).toBe(
      extractedFactId({ source: 'email/i/1.md', statement: 'the dentist appointment is on thursday' }),
    );
    const text = await readFile(path.join(root, first.path), 'utf8');
    const again = await facts.add({ ...fact, statement: 'The dentist appointment is on  Thursday', confidence: 0.2 });
    expect(again).toEqual(first);
    expect(await readFile(path.join(root, first.path), 'utf8')).toBe(text);
    expect(first.confidence).toBe(0.7);
  });

  it('gives owner facts dated random ids: the owner can say the same thing twice', async () => {
    const owner = { statement: 'I like tea.', about: ['topic:tea'], source: 'owner', trust: 'owner' as const };
    const one = await facts.add({ ...owner, observedAt: '2026-11-02T08:00:00Z' });
    const two = await facts.add({ ...owner, observedAt: '2026-11-02T08:00:00Z' });
    expect(one.id).toMatch(/^f-20261102-[0-9a-f]{8}$/);
    expect(two.id).not.toBe(one.id);
    expect(one.confidence).toBe(1);
  });

  it('refuses an extracted fact that supersedes an owner fact, and writes nothing', async () => {
    const owner = await facts.add({
      statement: 'My dentist appointment is on Friday 4 December.',
      about: ['topic:dentist'],
      source: 'owner',
      trust: 'owner',
      observedAt: '2026-11-01T09:00:00Z',
    });
    await expect(
      facts.add({
        statement: 'The dentist appointment moved to Monday.',
        about: ['topic:dentist'],
        source: 'email/i/9.md',
        trust: 'extracted',
        supersedes: [owner.id],
      }),
    ).rejects.toMatchObject({ code: 'MEMORY_SUPERSEDE_REFUSED', message: expect.stringContaining(owner.id) });
    expect((await facts.list({ includeSuperseded: true })).facts.map((fact) => fact.id)).toEqual([owner.id]);
    expect(await facts.supersededBy()).toEqual(new Map());
  });

  it('lets a newer fact supersede an older one; both stay readable, the old one only on request', async () => {
    const old = await facts.add({
      statement: 'The dentist appointment is on Thursday.',
      about: ['topic:dentist'],
      source: 'email/i/1.md',
      trust: 'extracted',
      observedAt: '2026-11-01T10:00:00Z',
    });
    const newer = await facts.add({
      statement: 'The dentist appointment moved to Friday.',
      about: ['topic:dentist'],
      source: 'email/i/2.md',
      trust: 'extracted',
      observedAt: '2026-11-03T10:00:00Z',
      supersedes: [old.id],
    });
    expect(await facts.supersededBy()).toEqual(new Map([[old.id, newer.id]]));
    expect((await facts.list({ about: 'topic:dentist' })).facts.map((fact) => fact.id)).toEqual([newer.id]);
    expect((await facts.list({ includeSuperseded: true })).facts.map((fact) => fact.id)).toEqual([newer.id, old.id]);
    expect((await facts.get(old.id))?.statement).toBe('The dentist appointment is on Thursday.');
    // An owner fact supersedes anything.
    const owner = await facts.add({
      statement: 'Dentist: Saturday now.',
      about: ['topic:dentist'],
      source: 'owner',
      trust: 'owner',
      supersedes: [newer.id],
    });
    expect((await facts.supersededBy()).get(newer.id)).toBe(owner.id);
  });

  it('refuses a confidence outside 0..1 and an empty statement', async () => {
    const base = { about: [], source: 'owner', trust: 'owner' as const };
    await expect(facts.add({ ...base, statement: 'x', confidence: 2 })).rejects.toMatchObject({
      code: 'MEMORY_INPUT_INVALID',
      message: expect.stringContaining('got 2'),
    });
    await expect(facts.add({ ...base, statement: ' ' })).rejects.toMatchObject({ code: 'MEMORY_INPUT_INVALID' });
  });

  it('reports a malformed fact note and skips it, never rewriting it', async () => {
    await mkdir(path.join(root, 'facts'), { recursive: true });
    const noTrust = '---\nsource: owner\nobserved_at: 2026-11-01T00:00:00Z\n---\nSomething.\n';
    const notYaml = '---\ntrust: [owner\n---\nSomething.\n';
    await writeFile(path.join(root, 'facts/f-bad.md'), noTrust);
    await writeFile(path.join(root, 'facts/f-worse.md'), notYaml);
    const good = await facts.add({ statement: 'Fine.', about: [], source: 'owner', trust: 'owner' });
    const { facts: listed, problems } = await facts.list();
    expect(listed.map((fact) => fact.id)).toEqual([good.id]);
    expect(problems.map((problem) => problem.path).sort()).toEqual(['facts/f-bad.md', 'facts/f-worse.md']);
    expect(problems.find((problem) => problem.path === 'facts/f-bad.md')?.message).toContain('`trust`');
    expect(await readFile(path.join(root, 'facts/f-bad.md'), 'utf8')).toBe(noTrust);
    expect(await readFile(path.join(root, 'facts/f-worse.md'), 'utf8')).toBe(notYaml);
  });
});
