// Issue 31 item 3: an approved action that fails must not read as done. An approved unsubscribe on an instance with
// no `smtp:` fails at once; the human log says it failed and why, the approval records the outcome, and every surface
// that lists approvals shows it.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { createApprovalRequest, decideApproval, readApproval } from '@assistant/actions';
import { loadRuntime } from '@assistant/integration-host';
import { FileHumanLog, FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { openFileTaskQueue } from '@assistant/queue';
import { createServer } from '@assistant/server';
import { runWorker } from '@assistant/worker';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

const item = 'email/local/1-1.md';

describe('action outcomes', () => {
  it('an approved unsubscribe that fails (no smtp:) is FAILED in the human log, with its code and reason, and on its approval', {
    timeout: 180_000,
  }, async () => {
    await using dir = await tempDir();
    await dir.write('Maildir/cur/.keep', '');
    await dir.write(
      'config.yaml',
      `data_dir: ./data
llms:
  default: {base_url: "http://127.0.0.1:9/v1", model: m}
integrations:
  - type: email
    name: local
    maildir: ./Maildir
    username: alice@example.test
    platforms:
      inbox:
        automations:
          - name: leave lists
            when: {has_list_unsubscribe: true}
            then: unsubscribe
            approval: required
`,
    );
    const runtime = await loadRuntime({ installation, configPath: path.join(dir.path, 'config.yaml'), cwd: dir.path });
    const queue = await openFileTaskQueue({ directory: runtime.config.paths.queue, settings: runtime.config.queue });
    const notes = new FileNoteStore({ root: runtime.config.paths.notes });
    const humanLog = new FileHumanLog({ directory: runtime.config.paths.logs });
    await notes.create(item, {
      data: {
        uid: 1,
        mailbox: 'INBOX',
        subject: 'Letters #1',
        has_list_unsubscribe: true,
        list_unsubscribe: ['mailto:leave@lists.example.test'],
        list_unsubscribe_one_click: false,
      },
    });
    const [rule] = runtime.registry.automations('local', 'inbox');
    if (!rule) throw new Error('the rule did not compile');
    const request = await createApprovalRequest({
      notes,
      humanLog,
      instance: 'local',
      domain: 'email',
      platform: 'inbox',
      notePath: item,
      item: (await notes.read(item))?.data ?? {},
      title: 'Letters #1',
      match: {
        rule: rule.name,
        ruleIndex: rule.index,
        provenance: rule.provenance,
        actions: rule.actions,
        approval: true,
        reason: 'has_list_unsubscribe = true',
      },
      expiresMs: 3_600_000,
      nowMs: Date.now(),
    });
    await decideApproval({ notes, queue, humanLog, id: request.id, decision: 'approve', by: 'cli' });
    await runWorker({
      config: runtime.config,
      registry: runtime.registry,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
    });
    expect(await queue.stats()).toMatchObject({ failed: 1, done: 0 });

    const [logFile] = await readdir(runtime.config.paths.logs);
    const log = await readFile(path.join(runtime.config.paths.logs, logFile ?? ''), 'utf8');
    // The two lines of the action read apart: what was decided, and that it failed, with the code and why.
    expect(log).toMatch(/\*\*local\/inbox\*\* decided: unsubscribe for Letters #1 \(approved \(ap-/);
    expect(log).toMatch(
      /\*\*local\/inbox\*\* FAILED: unsubscribe for "Letters #1": UnrecoverableError: sending mail needs `smtp:` settings on this email instance \(task [0-9a-z]{26}; rule "leave lists", approved \(ap-[0-9a-f]{12}\)\)/,
    );
    expect(log).not.toMatch(/done: /);

    const recorded = await readApproval(notes, request.id);
    expect(recorded).toMatchObject({
      status: 'approved',
      outcome: 'failed',
      outcome_reason: 'UnrecoverableError: sending mail needs `smtp:` settings on this email instance',
    });
    expect(Date.parse(recorded?.outcome_at ?? '')).not.toBeNaN();

    // Every surface that lists the approval says what became of it.
    const listed = await runCli(['approvals', '--all'], { cwd: dir.path, timeoutMs: 120_000 });
    expect(listed.stdout).toMatch(new RegExp(`^${request.id} {2}approved, failed +unsubscribe`, 'm'));
    const shown = await runCli(['approvals', 'show', request.id], { cwd: dir.path, timeoutMs: 120_000 });
    expect(shown.stdout).toMatch(/^outcome: failed at .*: UnrecoverableError: sending mail needs `smtp:`/m);
    const token = 'test-token-for-outcomes-0123456789abcdef';
    await using app = createServer({ config: runtime.config, token });
    await app.ready();
    const one = await app.inject({
      method: 'GET',
      url: `/api/approvals/${request.id}`,
      headers: { authorization: `Bearer ${token}` },
    });
    expect(one.json()).toMatchObject({ outcome: 'failed', outcome_reason: expect.stringContaining('smtp:') });
    const page = await app.inject({
      method: 'GET',
      url: '/approvals?status=all',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(/<span class="badge failed">failed<\/span>/);
    expect(page.body).toContain('UnrecoverableError: sending mail needs `smtp:` settings on this email instance');
    // The dashboard's log sets the failure apart from the `decided:` line before it.
    const logPage = await app.inject({ method: 'GET', url: '/log', headers: { authorization: `Bearer ${token}` } });
    expect(logPage.body).toMatch(/<li class="log-failed">.*FAILED: unsubscribe for &quot;Letters #1&quot;/);
    expect(logPage.body).toMatch(
      /<li><time>[^<]*<\/time><span class="log-source">local\/inbox<\/span> <span class="log-message">decided: unsubscribe/,
    );
  });
});
