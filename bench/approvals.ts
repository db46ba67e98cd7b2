// One pass of the periodic look for pending approval requests (the server's notifier and each chat channel's pushes
// do it every few seconds), at N approval notes of which P are pending: `listApprovals` (every note read and parsed,
// as before issue 38) against `ApprovalsIndex` (only what changed). `npm run bench:approvals [-- --notes 10000
// --pending 20 --passes 20 --json]`. It prints figures; it never fails for being slow, and exits non-zero only when the
// two disagree.
import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ApprovalsIndex, createApprovalRequest, listApprovals } from '@assistant/actions';
import { FileNoteStore } from '@assistant/notes';
import { machineLine } from './bench-processes.ts';

const { values } = parseArgs({
  options: {
    notes: { type: 'string', default: '10000' },
    pending: { type: 'string', default: '20' },
    passes: { type: 'string', default: '20' },
    dir: { type: 'string', default: os.tmpdir() },
    json: { type: 'boolean', default: false },
  },
});
const total = Number(values.notes);
const pendingCount = Number(values.pending);
const passes = Number(values.passes);
for (const [name, value] of [
  ['notes', total],
  ['pending', pendingCount],
  ['passes', passes],
] as const)
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} expects a whole number ≥ 1`);
if (pendingCount > total) throw new Error('--pending cannot be more than --notes');

const root = await mkdtemp(path.join(values.dir, 'assistant-bench-approvals-'));
try {
  const notes = new FileNoteStore({ root: path.join(root, 'notes') });
  await notes.create('cards/ada.md', { data: { name: 'Ada' }, body: '# Ada\n' });
  // One real request; the others are copies of its note under other ids, decided but for `pending` of them.
  const created = await createApprovalRequest({
    notes,
    instance: 'friendly',
    domain: 'greeter',
    platform: 'cards',
    notePath: 'cards/ada.md',
    title: 'Ada',
    match: {
      rule: 'cards',
      ruleIndex: 0,
      provenance: 'llm',
      actions: [{ kind: 'platform', name: 'send_card', key: 'send_card', tier: 'irreversible', yolo: false }],
      approval: true,
      reason: 'close >= 0.8',
    },
    expiresMs: 86_400_000,
    nowMs: Date.now(),
  });
  const folder = path.join(notes.root, 'approvals');
  const template = await readFile(path.join(folder, `${created.id}.md`), 'utf8');
  for (let index = 1; index < total; index += 1) {
    const id = `ap-${index.toString(16).padStart(12, '0')}`;
    let text = template.replaceAll(created.id, id);
    if (index >= pendingCount) text = text.replace('status: pending', 'status: rejected');
    await writeFile(path.join(folder, `${id}.md`), text);
  }
  // As after a quiet while: the folder last written minutes ago.
  const quiet = new Date(Date.now() - 600_000);
  await utimes(folder, quiet, quiet);

  const time = async (work: () => Promise<unknown>) => {
    const started = process.hrtime.bigint();
    const result = await work();
    return { ms: Number(process.hrtime.bigint() - started) / 1e6, result };
  };
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? 0;

  const full: number[] = [];
  let expected: string[] = [];
  for (let pass = 0; pass < Math.min(passes, 5); pass += 1) {
    const { ms, result } = await time(() => listApprovals(notes, { status: 'pending' }));
    full.push(ms);
    expected = (result as { id: string }[]).map((one) => one.id);
  }
  const pending = new ApprovalsIndex({ notes, root: notes.root });
  const first = await time(() => pending.pending());
  const steady: number[] = [];
  for (let pass = 0; pass < passes; pass += 1) {
    const { ms, result } = await time(() => pending.pending());
    steady.push(ms);
    const ids = (result as { id: string }[]).map((one) => one.id);
    if (JSON.stringify(ids) !== JSON.stringify(expected)) throw new Error('ApprovalsIndex and listApprovals disagree');
  }
  // A decision: the folder changed, so the pass lists it and reads the changed note (and the pending ones' stats).
  const decided = expected[0] ?? created.id;
  await notes.update(`approvals/${decided}.md`, { set: { status: 'approved' } });
  const afterDecision = await time(() => pending.pending());
  if ((afterDecision.result as { id: string }[]).some((one) => one.id === decided))
    throw new Error('the decided request is still listed as pending');

  // The Approvals page's full list through the same index: nothing changed, then after another decision (the folder
  // changed: every note is stat'ed, the decided one read).
  const fullSteady: number[] = [];
  // As a while after that decision: the folder's time is old enough to be trusted.
  const settled = new Date(Date.now() - 300_000);
  await utimes(folder, settled, settled);
  await pending.list();
  for (let pass = 0; pass < passes; pass += 1) fullSteady.push((await time(() => pending.list())).ms);
  await notes.update(`approvals/${expected[1] ?? created.id}.md`, { set: { status: 'rejected' } });
  const fullAfterDecision = await time(() => pending.list());

  const figures = {
    notes: total,
    pending: pendingCount,
    listApprovalsMs: median(full),
    firstPassMs: first.ms,
    steadyPassMs: median(steady),
    afterDecisionMs: afterDecision.ms,
    fullListSteadyMs: median(fullSteady),
    fullListAfterDecisionMs: fullAfterDecision.ms,
  };
  if (values.json) console.log(JSON.stringify(figures));
  else {
    console.log(`machine: ${machineLine(values.dir)}`);
    console.log(`${total} approval notes, ${pendingCount} pending`);
    console.log(`listApprovals (every note read), median of ${full.length}: ${figures.listApprovalsMs.toFixed(1)} ms`);
    console.log(`ApprovalsIndex.pending first pass (reads all once): ${figures.firstPassMs.toFixed(1)} ms`);
    console.log(
      `ApprovalsIndex.pending pass, nothing changed, median of ${passes}: ${figures.steadyPassMs.toFixed(2)} ms`,
    );
    console.log(`ApprovalsIndex.pending pass after one decision: ${figures.afterDecisionMs.toFixed(1)} ms`);
    console.log(`ApprovalsIndex.list (every request), nothing changed: ${figures.fullListSteadyMs.toFixed(2)} ms`);
    console.log(`ApprovalsIndex.list after one decision: ${figures.fullListAfterDecisionMs.toFixed(1)} ms`);
  }
} finally {
  await rm(root, { recursive: true, force: true });
}
