import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ContactBook, contactBook } from './contact-book.ts';
import { nameSimilarity } from './contact-matching.ts';

let root: string;
let contacts: ContactBook;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-contacts-'));
  contacts = contactBook({ notes: new FileNoteStore({ root }) });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function writeNote(relative: string, text: string): Promise<void> {
  await mkdir(path.dirname(path.join(root, relative)), { recursive: true });
  await writeFile(path.join(root, relative), text);
}
const bytes = (relative: string) => readFile(path.join(root, relative), 'utf8');

describe('nameSimilarity', () => {
  it('matches initials, reordered names and accents, and keeps different first names apart', () => {
    expect(nameSimilarity('Alice Martin', 'alice m.')).toBeGreaterThanOrEqual(0.9);
    expect(nameSimilarity('Martin, Alice', 'Alice Martin')).toBe(1);
    expect(nameSimilarity('Zoë Dupont', 'Zoe Dupont')).toBe(1);
    expect(nameSimilarity('Bob Smith', 'Rob Smith')).toBeLessThan(0.9);
    expect(nameSimilarity('Alice', 'Alice Martin')).toBeLessThan(0.9);
  });
});

describe('ContactBook', () => {
  it('creates contacts with unique slugs from their names', async () => {
    const first = await contacts.create({ name: 'Alice Martin', emails: ['Alice@Acme.example'] }, { by: 'owner' });
    const second = await contacts.create({ name: 'Alice Martin' }, { by: 'extraction' });
    expect(first.slug).toBe('alice-martin');
    expect(first.emails).toEqual(['alice@acme.example']);
    expect(second.slug).toBe('alice-martin-2');
    expect(second.created_by).toBe('extraction');
  });

  it('refuses an empty name, saying what it got', async () => {
    await expect(contacts.create({ name: '  ' }, { by: 'owner' })).rejects.toMatchObject({
      code: 'MEMORY_INPUT_INVALID',
      message: expect.stringContaining('"  "'),
    });
  });

  it('finds by exact address, handle and observed identifiers with score 1, and by similar names below it', async () => {
    const alice = await contacts.create(
      { name: 'Alice Martin', emails: ['alice@acme.example'], organisation: 'Acme' },
      { by: 'owner' },
    );
    await contacts.create({ name: 'Bob Stone', handles: { github: ['@bobs'] } }, { by: 'owner' });
    await contacts.observe({
      slug: alice.slug,
      observed: [{ kind: 'handle', platform: 'GitHub', value: 'alice-a' }],
      source: 'github/x/1.md',
    });
    expect((await contacts.find({ email: 'ALICE@acme.example' }))[0]).toMatchObject({
      score: 1,
      contact: { slug: 'alice-martin' },
    });
    expect((await contacts.find({ handle: { platform: 'github', value: 'alice-a' } }))[0]).toMatchObject({
      score: 1,
      contact: { slug: 'alice-martin' },
      why: expect.stringContaining('observed'),
    });
    expect((await contacts.find({ handle: { platform: 'github', value: 'BobS' } }))[0]?.contact.slug).toBe('bob-stone');
    const byName = await contacts.find({ name: 'alice m.', email: 'a.martin@acme.example' });
    expect(byName[0]?.contact.slug).toBe('alice-martin');
    expect(byName[0]?.score).toBeGreaterThanOrEqual(0.9);
    expect(byName[0]?.score).toBeLessThan(1);
    expect(byName[0]?.why).toContain('organisation');
    expect(await contacts.find({ name: 'Carol Jones' })).toEqual([]);
  });

  it('takes a lone first name for the one contact that has it, and not when two contacts share it', async () => {
    await contacts.create({ name: 'Lena Fischer', organisation: 'Acme Corp' }, { by: 'owner' });
    await contacts.create({ name: 'Sam Porter' }, { by: 'owner' });
    await contacts.create({ name: 'Sam Whitley' }, { by: 'owner' });
    const lena = await contacts.find({ name: 'Lena', organisation: 'Acme' });
    expect(lena[0]).toMatchObject({ contact: { slug: 'lena-fischer' }, why: expect.stringContaining('only contact') });
    expect(lena[0]?.score).toBeGreaterThanOrEqual(0.9);
    expect((await contacts.find({ name: 'Lena', organisation: 'Globex' }))[0]?.score ?? 0).toBeLessThan(0.9);
    for (const match of await contacts.find({ name: 'Sam' })) expect(match.score).toBeLessThan(0.9);
  });

  it('observe adds only to observed and sources, deduplicated, never to identity fields', async () => {
    const alice = await contacts.create({ name: 'Alice Martin', emails: ['alice@acme.example'] }, { by: 'owner' });
    const observation = {
      slug: alice.slug,
      observed: [
        { kind: 'email' as const, value: 'alice@acme.example' },
        { kind: 'email' as const, value: 'alice@home.example' },
        { kind: 'name' as const, value: 'Ali' },
      ],
      source: 'email/i/1.md',
    };
    await contacts.observe(observation);
    const after = await contacts.observe(observation);
    expect(after.name).toBe('Alice Martin');
    expect(after.emails).toEqual(['alice@acme.example']);
    expect(after.observed).toEqual([
      { kind: 'email', value: 'alice@home.example', source: 'email/i/1.md' },
      { kind: 'name', value: 'Ali', source: 'email/i/1.md' },
    ]);
    expect(after.sources).toEqual(['email/i/1.md']);
  });

  it('merge then unmerge leaves both notes byte for byte as they were, hand formatting included', async () => {
    const aliceText = `---
# Alice, written by hand
name: Alice Martin   # her full name
emails: [alice@acme.example]
handles:
  github: [alice-a]
organisation: "Acme"
sources:
  - email/i/1.md
---
Met at the conference.
`;
    const otherText = `---
name: A. Martin
emails:
  - amartin@home.example
created_by: extraction
observed: []
sources: [github/x/2.md]
---
`;
    await writeNote('contacts/alice-martin.md', aliceText);
    await writeNote('contacts/a-martin.md', otherText);
    const merged = await contacts.merge({ into: 'alice-martin', from: 'a-martin' });
    expect(merged.from.merged_into).toBe('alice-martin');
    expect(merged.into.merged_from).toEqual(['a-martin']);
    // Lookups of the merged one resolve to the primary; both histories are still there.
    expect((await contacts.resolve('a-martin'))?.slug).toBe('alice-martin');
    expect((await contacts.find({ email: 'amartin@home.example' }))[0]?.contact.slug).toBe('alice-martin');
    expect((await contacts.get('a-martin'))?.sources).toEqual(['github/x/2.md']);

    await contacts.unmerge({ slug: 'a-martin' });
    expect(await bytes('contacts/alice-martin.md')).toBe(aliceText);
    expect(await bytes('contacts/a-martin.md')).toBe(otherText);
  });

  it('refuses to merge a contact into itself or one that is merged already', async () => {
    await contacts.create({ name: 'Alice Martin' }, { by: 'owner' });
    await contacts.create({ name: 'Bob Stone' }, { by: 'owner' });
    await contacts.create({ name: 'Carol Jones' }, { by: 'owner' });
    await expect(contacts.merge({ into: 'alice-martin', from: 'alice-martin' })).rejects.toMatchObject({
      code: 'MEMORY_INPUT_INVALID',
    });
    await contacts.merge({ into: 'alice-martin', from: 'bob-stone' });
    await expect(contacts.merge({ into: 'carol-jones', from: 'bob-stone' })).rejects.toMatchObject({
      code: 'MEMORY_INPUT_INVALID',
    });
    await expect(contacts.merge({ into: 'nobody', from: 'carol-jones' })).rejects.toMatchObject({
      code: 'MEMORY_NOT_FOUND',
    });
    await expect(contacts.unmerge({ slug: 'carol-jones' })).rejects.toMatchObject({ code: 'MEMORY_INPUT_INVALID' });
    // A slug is a plain file name: a path cannot reach a note outside contacts/.
    await expect(contacts.merge({ into: '../tasks/t-1', from: 'carol-jones' })).rejects.toMatchObject({
      code: 'MEMORY_INPUT_INVALID',
      message: expect.stringContaining('"../tasks/t-1"'),
    });
    expect(await contacts.get('../contacts/alice-martin')).toBeUndefined();
  });

  it('reports a malformed contact note and skips it, never rewriting it', async () => {
    const broken = '---\nname: [unclosed\n---\n';
    const nameless = '---\nemails: [x@y.example]\n---\nno name\n';
    await writeNote('contacts/broken.md', broken);
    await writeNote('contacts/nameless.md', nameless);
    await contacts.create({ name: 'Alice Martin', emails: ['x@y.example'] }, { by: 'owner' });
    const { contacts: listed, problems } = await contacts.list();
    expect(listed.map((contact) => contact.slug)).toEqual(['alice-martin']);
    expect(problems.map((problem) => problem.path).sort()).toEqual(['contacts/broken.md', 'contacts/nameless.md']);
    expect(problems.find((problem) => problem.path === 'contacts/nameless.md')?.message).toContain('`name`');
    expect((await contacts.find({ email: 'x@y.example' })).map((match) => match.contact.slug)).toEqual([
      'alice-martin',
    ]);
    expect(await contacts.get('broken')).toBeUndefined();
    expect(await bytes('contacts/broken.md')).toBe(broken);
    expect(await bytes('contacts/nameless.md')).toBe(nameless);
  });
});
