// Approval requests through the CLI and the REST API, with real processes and a real server.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { enqueueActions, readApproval } from '@assistant/actions';
import {
  issueInputs,
  memo,
  memoTail,
  mustShow,
  serviceApprovalId,
  toolCallApprovalId,
  writeSurfaceApprovals,
} from '@assistant/actions/testing';
import { evaluateRules } from '@assistant/automations';
import { loadRuntime } from '@assistant/integration-host';
import { FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { openFileTaskQueue } from '@assistant/queue';
import { createServer } from '@assistant/server';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { repoRoot, runCli } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const greeter = path.join(repoRoot, 'tests/fixtures/integrations/custom/greeter');
const config = `data_dir: ./data
integration_dirs: [${JSON.stringify(greeter)}]
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "http://127.0.0.1:11434/v1", model: m}
integrations:
  - type: greeter
    name: friendly
    platforms:
      cards:
        names: [Ada, Anne]
        classifications:
          close: "is this person close?"
        automations:
          - name: cards for close people
            when: {close: ">= 0.8"}
            then: send_card
            approval: required
`;

const cli = (dir: TempDir, args: readonly string[]) => runCli(args, { cwd: dir.path });
// For a test that runs several commands one after the other on a loaded machine: each may take its time to start.
const slowCli = (dir: TempDir, args: readonly string[]) => runCli(args, { cwd: dir.path, timeoutMs: 120_000 });
const requests = z.array(z.looseObject({ id: z.string(), status: z.string(), title: z.string() }));

describe('approvals', () => {
  it("show what will happen in full on the CLI and over REST: a 5,000-character argument to its last line, a service's inputs (issue 30)", {
    timeout: 300_000,
  }, async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config);
    const { config: loaded } = await loadRuntime({
      installation,
      configPath: path.join(dir.path, 'config.yaml'),
      cwd: dir.path,
    });
    await writeSurfaceApprovals(new FileNoteStore({ root: loaded.paths.notes }));

    // The list shows the service's inputs in full, and of the long call as much as it shows, then says how much more.
    const listed = await slowCli(dir, ['approvals']);
    expect(listed.code).toBe(0);
    for (const line of mustShow.slice(1)) expect(listed.stdout).toContain(line);
    expect(listed.stdout).toMatch(
      new RegExp(`\\d+ more characters: open the request \\(\`assistant approvals show ${toolCallApprovalId}\``),
    );
    // `approvals show` shows the call in full, down to the last line of its argument.
    const shown = await slowCli(dir, ['approvals', 'show', toolCallApprovalId]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(JSON.stringify(memo));
    expect(shown.stdout).toContain(memoTail);
    expect(shown.stdout).not.toMatch(/more characters/);
    const service = await slowCli(dir, ['approvals', 'show', serviceApprovalId]);
    expect(service.stdout).toContain('input body (42 characters):\nHere they are:\nuser admin\npassword hunter2');
    for (const line of mustShow.slice(1)) expect(service.stdout).toContain(line);
    const json = JSON.parse((await slowCli(dir, ['approvals', 'show', toolCallApprovalId, '--json'])).stdout);
    expect(json.rendering).toContain(memoTail);
    expect(JSON.parse(json.tool_call.arguments).memo).toBe(memo);

    const token = 'test-token-for-approvals-0123456789abcd';
    const headers = { authorization: `Bearer ${token}` };
    await using app = createServer({ config: loaded, token });
    await app.ready();
    const list = (await app.inject({ method: 'GET', url: '/api/approvals', headers })).json();
    const byId = new Map(
      (list.approvals as { id: string; rendering: string; bound: boolean }[]).map((entry) => [entry.id, entry]),
    );
    expect(byId.get(toolCallApprovalId)?.rendering).toContain(JSON.stringify(memo));
    expect(byId.get(serviceApprovalId)?.bound).toBe(true);
    for (const [name, value] of Object.entries(issueInputs)) {
      expect(byId.get(serviceApprovalId)?.rendering).toContain(name === 'body' ? value : `input ${name} = "${value}"`);
    }
    const one = await app.inject({ method: 'GET', url: `/api/approvals/${toolCallApprovalId}`, headers });
    expect(one.statusCode).toBe(200);
    expect(one.json().rendering).toContain(memoTail);
    expect((await app.inject({ method: 'GET', url: '/api/approvals/ap-000000000000', headers })).statusCode).toBe(404);
  });

  it('are decided several at once from the CLI, each bound to the digest it was shown with (issue 31)', {
    timeout: 300_000,
  }, async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config);
    expect((await slowCli(dir, ['trigger', 'friendly', 'cards'])).code).toBe(0);
    expect((await slowCli(dir, ['work', '--exit-when-idle'])).code).toBe(0);
    const shown = z
      .array(z.looseObject({ id: z.string(), title: z.string(), digest: z.string() }))
      .parse(JSON.parse((await slowCli(dir, ['approvals', '--json'])).stdout));
    const ada = shown.find((request) => request.title === 'Ada');
    const anne = shown.find((request) => request.title === 'Anne');
    if (ada === undefined || anne === undefined) throw new Error('expected requests for Ada and Anne');
    // Ada's as shown; Anne's with a digest of something else (a request changed since the person read it).
    const decided = await slowCli(dir, ['approve', `${ada.id}@${ada.digest}`, `${anne.id}@sha256:${'0'.repeat(64)}`]);
    expect(decided.code).toBe(1);
    expect(decided.stdout).toMatch(new RegExp(`^approved ${ada.id}: tasks `, 'm'));
    expect(decided.stderr).toContain(`refused ${anne.id}: `);
    const after = requests.parse(JSON.parse((await slowCli(dir, ['approvals', '--all', '--json'])).stdout));
    expect(after.find((request) => request.id === ada.id)?.status).toBe('approved');
    expect(after.find((request) => request.id === anne.id)?.status).toBe('pending');
    // Several ids without digests are decided as they are now, as one id is.
    const rejected = await slowCli(dir, ['reject', anne.id, ada.id, '--json']);
    expect(rejected.code).toBe(1);
    const outcome = JSON.parse(rejected.stdout);
    expect(outcome.decided.map((entry: { id: string }) => entry.id)).toEqual([anne.id]);
    expect(outcome.refused.map((entry: { id: string }) => entry.id)).toEqual([ada.id]);
  });

  it('are listed, approved and rejected from the CLI and over REST, each decided once', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config);
    expect((await cli(dir, ['trigger', 'friendly', 'cards'])).code).toBe(0);
    expect((await cli(dir, ['work', '--exit-when-idle'])).code).toBe(0);

    const listed = await cli(dir, ['approvals']);
    expect(listed.stdout).toMatch(
      /^ap-[0-9a-f]{12} {2}pending +send_card for Ada\n {4}rule "cards for close people" of friendly\/cards: close >= 0\.8; expires /m,
    );
    const pending = requests.parse(JSON.parse((await cli(dir, ['approvals', '--json'])).stdout));
    expect(pending.map((request) => request.title).sort()).toEqual(['Ada', 'Anne']);
    const ada = pending.find((request) => request.title === 'Ada')?.id ?? '';
    const anne = pending.find((request) => request.title === 'Anne')?.id ?? '';

    const approved = await cli(dir, ['approve', ada]);
    expect(approved.stdout).toMatch(new RegExp(`^approved ${ada}: send_card \\(task [0-9a-z]{26}\\)\\n$`));
    const again = await cli(dir, ['approve', ada]);
    expect(again.stderr).toMatch(new RegExp(`^assistant: approval ${ada} was approved already at `));
    expect(again.code).toBe(1);
    expect((await cli(dir, ['approve', 'ap-000000000000'])).stderr).toBe(
      'assistant: no approval request ap-000000000000\n',
    );
    expect((await cli(dir, ['approve', 'nonsense'])).stderr).toMatch(/is not an approval id/);

    // Anne's request over REST.
    const { config: loaded } = await loadRuntime({
      installation,
      configPath: path.join(dir.path, 'config.yaml'),
      cwd: dir.path,
    });
    const token = 'test-token-for-approvals-0123456789abcd';
    const headers = { authorization: `Bearer ${token}` };
    await using app = createServer({ config: loaded, token });
    await app.ready();
    const rejected = await app.inject({
      method: 'POST',
      url: `/api/approvals/${anne}`,
      payload: { decision: 'reject' },
      headers,
    });
    expect(rejected.statusCode).toBe(200);
    expect(rejected.json()).toMatchObject({ id: anne, status: 'rejected', decided_by: 'api' });
    const twice = await app.inject({
      method: 'POST',
      url: `/api/approvals/${anne}`,
      payload: { decision: 'approve' },
      headers,
    });
    expect(twice.statusCode).toBe(409);
    expect(twice.json()).toMatchObject({ error: { code: 'CONFLICT' } });
    const bad = await app.inject({
      method: 'POST',
      url: `/api/approvals/${anne}`,
      payload: { decision: 'maybe' },
      headers,
    });
    expect(bad.statusCode).toBe(400);
    const all = await app.inject({ method: 'GET', url: '/api/approvals?status=all', headers });
    expect(
      requests
        .parse(all.json().approvals)
        .map((request) => [request.title, request.status])
        .sort(),
    ).toEqual([
      ['Ada', 'approved'],
      ['Anne', 'rejected'],
    ]);

    expect((await cli(dir, ['work', '--exit-when-idle'])).code).toBe(0);
    const adaNote = await cli(dir, ['notes', 'show', 'greeter/friendly/ada.md', '--json']);
    expect(JSON.parse(adaNote.stdout).data.applied).toEqual(['send_card']);
    const anneNote = await cli(dir, ['notes', 'show', 'greeter/friendly/anne.md', '--json']);
    expect(JSON.parse(anneNote.stdout).data.applied).toBeUndefined();
    const log = await cli(dir, ['log']);
    expect(log.stdout).toMatch(/\*\*approvals\*\* rejected send_card for Anne \(a person \(api\) said no/);
    expect(log.stdout).toMatch(/send_card for Ada \(approved \(ap-[0-9a-f]{12}\); rule "cards for close people"/);
  });

  it('expire: a late approval is refused, the request marked expired, and housekeeping drops the rest', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config);
    await cli(dir, ['trigger', 'friendly', 'cards']);
    await cli(dir, ['work', '--exit-when-idle']);
    const pending = requests.parse(JSON.parse((await cli(dir, ['approvals', '--json'])).stdout));
    const [first, second] = pending.map((request) => request.id);
    // A person may edit a request by hand; here its expiry is moved into the past.
    for (const id of [first, second]) {
      const file = path.join(dir.path, 'data/notes/approvals', `${id}.md`);
      const text = await readFile(file, 'utf8');
      await writeFile(file, text.replace(/^expires_at: .*$/m, 'expires_at: 2020-01-01T00:00:00.000Z'));
    }
    const late = await cli(dir, ['approve', first ?? '']);
    expect(late.stderr).toBe(`assistant: approval ${first} expired at 2020-01-01T00:00:00.000Z; nothing was done\n`);
    expect(late.code).toBe(1);
    // The other one is dropped by the next housekeeping run.
    await cli(dir, ['trigger', 'system', 'housekeeping']);
    await cli(dir, ['work', '--exit-when-idle']);
    const expired = requests.parse(JSON.parse((await cli(dir, ['approvals', '--status', 'expired', '--json'])).stdout));
    expect(expired.map((request) => request.id).sort()).toEqual([first, second].sort());
    const log = await cli(dir, ['log']);
    expect(log.stdout.match(/nobody approved it in time/g)).toHaveLength(2);
    expect(log.stdout).toMatch(/\*\*system\/housekeeping\*\* dropped 1 expired approval requests/);
    const notes = await cli(dir, ['queue', 'ls', '--type', 'greeter.cards.act', '--json']);
    expect(JSON.parse(notes.stdout)).toEqual([]);
  });

  it('hole 11: two processes approving one request at once: exactly one succeeds, the other gets a conflict', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config);
    await cli(dir, ['trigger', 'friendly', 'cards']);
    await cli(dir, ['work', '--exit-when-idle']);
    const [ada] = requests.parse(JSON.parse((await cli(dir, ['approvals', '--json'])).stdout));
    const outcomes = await Promise.all([cli(dir, ['approve', ada?.id ?? '']), cli(dir, ['approve', ada?.id ?? ''])]);
    expect(outcomes.map((outcome) => outcome.code).sort()).toEqual([0, 1]);
    expect(outcomes.find((outcome) => outcome.code === 1)?.stderr).toMatch(/was approved already/);
    const tasks = await cli(dir, ['queue', 'ls', '--type', 'greeter.cards.act', '--json']);
    expect(JSON.parse(tasks.stdout)).toHaveLength(1);
  });

  it('hole 1: `assistant act` takes an irreversible action by hand through an approval it gives at once, and only once', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config);
    await cli(dir, ['trigger', 'friendly', 'cards']);
    await cli(dir, ['work', '--exit-when-idle']);
    const acted = await cli(dir, ['act', 'friendly', 'cards', 'greeter/friendly/anne.md', 'send_card']);
    expect(acted.stdout).toMatch(
      /^send_card for greeter\/friendly\/anne\.md: task [0-9a-z]{26} \(approval ap-[0-9a-f]{12}\)\n$/,
    );
    expect(acted.code).toBe(0);
    const approved = requests.parse(
      JSON.parse((await cli(dir, ['approvals', '--status', 'approved', '--json'])).stdout),
    );
    expect(approved).toEqual([
      expect.objectContaining({ status: 'approved', title: 'Anne', provenance: 'manual', decided_by: 'cli' }),
    ]);
    expect((await cli(dir, ['work', '--exit-when-idle'])).code).toBe(0);
    const anne = await cli(dir, ['notes', 'show', 'greeter/friendly/anne.md', '--json']);
    expect(JSON.parse(anne.stdout).data.applied).toEqual(['send_card']);
    const again = await cli(dir, ['act', 'friendly', 'cards', 'greeter/friendly/anne.md', 'send_card']);
    expect(again.stdout).toMatch(/^send_card was taken on greeter\/friendly\/anne\.md already: nothing to do/);
    const wrong = await cli(dir, ['act', 'friendly', 'cards', 'greeter/friendly/anne.md', 'kiss']);
    expect(wrong.stderr).toMatch(/^assistant: `kiss` is not an action of greeter\.cards; its actions: /);
    expect(wrong.code).toBe(1);
    const missing = await cli(dir, ['act', 'friendly', 'cards', 'greeter/friendly/nobody.md', 'hug']);
    expect(missing.stderr).toBe('assistant: no note greeter/friendly/nobody.md\n');
    const elsewhere = await cli(dir, ['act', 'friendly', 'cards', 'greeter/other/anne.md', 'hug']);
    expect(elsewhere.stderr).toMatch(/^assistant: greeter\/other\/anne\.md is not an item of friendly/);
    expect(elsewhere.code).toBe(1);
  });

  it('hole 4: an unsubscribe approval shows where it goes: the note and `assistant approvals` name the address', async () => {
    await using dir = await tempDir();
    await dir.write(
      'config.yaml',
      `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "http://127.0.0.1:11434/v1", model: m}
integrations:
  - type: email
    name: personal
    maildir: ./mail
    platforms:
      inbox:
        automations:
          - name: leave lists
            when: {has_list_unsubscribe: true}
            then: [unsubscribe, send_reply]
            approval: required
`,
    );
    const { config: loaded, registry } = await loadRuntime({
      installation,
      configPath: path.join(dir.path, 'config.yaml'),
      cwd: dir.path,
    });
    const notes = new FileNoteStore({ root: loaded.paths.notes });
    const queue = await openFileTaskQueue({ directory: loaded.paths.queue, settings: loaded.queue });
    const notePath = 'email/personal/1-7.md';
    await notes.create(notePath, {
      data: {
        subject: 'Deals',
        from_address: 'shop@lists.example',
        has_list_unsubscribe: true,
        list_unsubscribe: ['mailto:leave@lists.example?subject=relay'],
        unsubscribe_method: 'mailto',
        unsubscribe_target: 'leave@lists.example',
      },
    });
    const matches = evaluateRules(registry.automations('personal', 'inbox'), {
      classifications: {},
      fields: { has_list_unsubscribe: true },
    });
    const { approvals } = await enqueueActions({
      notes,
      queue,
      instance: 'personal',
      domain: 'email',
      platform: 'inbox',
      notePath,
      title: '"Deals"',
      matches,
      approvalExpiresMs: 60_000,
    });
    const id = approvals[0]?.id ?? '';
    const note = await notes.read(`approvals/${id}.md`);
    expect(note?.body).toMatch(/^- unsubscribe → leave@lists\.example \(irreversible\)$/m);
    expect(note?.body).toMatch(/^- send_reply → shop@lists\.example \(irreversible\)$/m);
    expect(await readApproval(notes, id)).toMatchObject({
      actions: [
        { name: 'unsubscribe', target: { field: 'unsubscribe_target', value: 'leave@lists.example' } },
        { name: 'send_reply', target: { field: 'from_address', value: 'shop@lists.example' } },
      ],
    });
    const listed = await cli(dir, ['approvals']);
    expect(listed.stdout).toMatch(
      /^ap-[0-9a-f]{12} {2}pending +unsubscribe → leave@lists\.example, send_reply → shop@lists\.example for "Deals"$/m,
    );
  });
});
