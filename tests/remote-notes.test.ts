// A remote worker's notes and human log through the real server process: an HttpNoteStore reads a note, a person
// edits the same file on the server's disk, and the remote update raises the same conflict a local worker would get
// (or lands on top of the person's edit when it touches other keys). The server decides, from its own disk.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import { FileNoteStore, HttpHumanLog, HttpNoteStore, NoteConflictError } from '@assistant/notes';
import { describe, expect, it } from 'vitest';
import { readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

const handWritten = `---
# kept by hand
subject: "Quarterly report"   # as the sender wrote it
status: new
---

Notes from the call.
`;

describe('notes and the human log through the server, as a remote worker reaches them', () => {
  it('raises the local conflict for a same-key edit on the server’s disk, applies other keys on top, logs there', async () => {
    await using dir = await tempDir();
    const port = await freePort();
    const configPath = await dir.write('config.yaml', `data_dir: ./data\nserver:\n  port: ${port}\n`);
    const dataDir = path.join(dir.path, 'data');
    const notesRoot = path.join(dataDir, 'notes');
    const server = startNode({ args: [cliMain, 'serve', '--config', configPath], cwd: dir.path });
    try {
      await server.waitForOutput(/listening on/);
      const token = await readApiToken(dataDir);
      const serverUrl = `http://127.0.0.1:${port}`;
      const remote = new HttpNoteStore({ serverUrl, token });
      const local = new FileNoteStore({ root: notesRoot });
      const file = path.join(notesRoot, 'email/work/42.md');
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, handWritten);

      // Same key: the worker read, the person changed `status` in their editor, the worker's `status` is refused.
      const read = await remote.read('email/work/42.md');
      expect(read?.data).toEqual({ subject: 'Quarterly report', status: 'new' });
      const personEdit = handWritten.replace('status: new', 'status: keep   # leave it');
      await writeFile(file, personEdit);
      const remoteError = await remote
        .update('email/work/42.md', { set: { status: 'archived', archived_at: '2026-03-01' }, basedOn: read })
        .catch((caught: unknown) => caught);
      expect(remoteError).toBeInstanceOf(NoteConflictError);
      expect(remoteError).toMatchObject({ path: 'email/work/42.md', keys: ['status'] });
      expect(await readFile(file, 'utf8')).toBe(personEdit);
      // Exactly what a worker on the server's machine gets for the same update on the same read.
      const localError = await local
        .update('email/work/42.md', { set: { status: 'archived', archived_at: '2026-03-01' }, basedOn: read })
        .catch((caught: unknown) => caught);
      expect(localError).toBeInstanceOf(NoteConflictError);
      expect((remoteError as Error).message).toBe((localError as Error).message);

      // Other keys: applied on top of the person's edit, which stays byte for byte.
      const again = await remote.read('email/work/42.md');
      await writeFile(file, personEdit.replace('Quarterly report', 'Q1 report'));
      const written = await remote.update('email/work/42.md', { set: { label: 'reports' }, basedOn: again });
      expect(written.data).toEqual({ subject: 'Q1 report', status: 'keep', label: 'reports' });
      expect(await readFile(file, 'utf8')).toBe(
        personEdit
          .replace('Quarterly report', 'Q1 report')
          .replace('status: keep   # leave it\n', 'status: keep   # leave it\nlabel: reports\n'),
      );

      // Human log lines written remotely land in the server's daily file.
      const log = new HttpHumanLog({ serverUrl, token });
      const at = new Date();
      await log.write({ source: 'email/work', message: 'labelled "Q1 report"', reason: 'rule reports', at });
      const day = `${at.getFullYear()}-${String(at.getMonth() + 1).padStart(2, '0')}-${String(at.getDate()).padStart(2, '0')}`;
      expect(await readFile(path.join(dataDir, 'logs', `${day}.md`), 'utf8')).toMatch(
        /^- \d\d:\d\d:\d\d \*\*email\/work\*\* labelled "Q1 report" \(rule reports\)\n$/m,
      );

      // A wrong token: a clear 401 naming the server, never the token.
      const wrong = `${token.slice(0, -4)}beef`;
      const refused = await new HttpNoteStore({ serverUrl, token: wrong })
        .read('email/work/42.md')
        .catch((caught: unknown) => caught);
      expect(refused).toBeInstanceOf(AssistantError);
      expect(refused).toMatchObject({ code: 'UNAUTHORIZED' });
      expect((refused as Error).message).toContain(`the Assistant server at ${serverUrl} refused`);
      expect((refused as Error).message).toContain('(401)');
      expect((refused as Error).message).not.toContain(wrong);
      expect(server.stdout() + server.stderr()).not.toContain(token);
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGTERM');
      await server.exited;
    }
  });
});
