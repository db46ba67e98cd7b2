// Notes and the human log through the `assistant` command.
import { appendFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { cliMain, runCli, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

async function setup(): Promise<TempDir> {
  const dir = await tempDir();
  await dir.write('config.yaml', 'data_dir: ./data\n');
  await dir.write(
    'data/notes/email/personal/1.md',
    '---\nsubject: "Lunch"\nstatus: new\nconfidence: 0.9\n---\n# Lunch on Friday\n',
  );
  await dir.write(
    'data/notes/email/personal/2.md',
    '---\nsubject: Invoice\nstatus: read\nconfidence: 0.2\n---\nPay by Monday.\n',
  );
  await dir.write('data/notes/email/personal/broken.md', '---\nsubject: bad: [\n---\n');
  await dir.write('data/logs/2026-11-22.md', '- 12:00:00 **queue** first line\n');
  return dir;
}

describe('assistant notes', () => {
  it('lists, shows and searches notes by text and fields, reporting broken ones', async () => {
    await using dir = await setup();
    const cli = (args: string[]) => runCli(args, { cwd: dir.path });
    expect((await cli(['notes', 'ls', 'email'])).stdout).toBe(
      'email/personal/1.md\nemail/personal/2.md\nemail/personal/broken.md\n',
    );
    const show = await cli(['notes', 'show', 'email/personal/1.md', '--json']);
    expect(JSON.parse(show.stdout)).toEqual({
      path: 'email/personal/1.md',
      data: { subject: 'Lunch', status: 'new', confidence: 0.9 },
      body: '# Lunch on Friday\n',
    });
    const search = await cli(['notes', 'search', 'FRIDAY', '--where', 'confidence>=0.5']);
    expect(search.stdout).toBe('email/personal/1.md\n');
    expect(search.stderr).toMatch(/^warning: skipped email\/personal\/broken\.md:2:\d+: /);
    expect((await cli(['notes', 'search', '--where', 'status=read'])).stdout).toBe('email/personal/2.md\n');
    const outside = await cli(['notes', 'show', '../../etc/passwd']);
    expect(outside.stderr).toMatch(/^assistant: note path `..\/..\/etc\/passwd` leaves the notes folder/);
    expect(outside.code).toBe(2);
    const badWhere = await cli(['notes', 'search', '--where', 'nonsense']);
    expect(badWhere.code).toBe(2);
  });
});

describe('assistant log', () => {
  it('prints a day and follows new lines', async () => {
    await using dir = await setup();
    const day = await runCli(['log', '--date', '2026-11-22'], { cwd: dir.path });
    expect(day.stdout).toBe('- 12:00:00 **queue** first line\n');
    const follower = startNode({ args: [cliMain, 'log', '--date', '2026-11-22', '--follow'], cwd: dir.path });
    await follower.waitForOutput(/first line\n/);
    await appendFile(`${dir.path}/data/logs/2026-11-22.md`, '- 12:00:01 **queue** second line\n');
    await follower.waitForOutput(/second line\n/);
    follower.child.kill('SIGINT');
    const run = await follower.exited;
    expect(run.stdout).toBe('- 12:00:00 **queue** first line\n- 12:00:01 **queue** second line\n');
    expect(run.code).toBe(0);
  });
});
