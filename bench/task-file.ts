// What reading one task file costs, piece by piece: the nesting pre-scan (issue 14, hole 17) against the YAML parse
// it guards, the whole parseTaskFile, and scrubbing a result of secrets before it is written (hole 20).
// `npm run bench:task-file [-- --iterations 20000 --json]`. It prints figures; it never fails for being slow.
import { parseArgs } from 'node:util';
import { registerSecretValue, scrubSecretsDeep } from '@assistant/errors';
import { newTaskId, parseTaskFile, type TaskName, yamlTextNestingDepth } from '@assistant/queue';
import { parseDocument } from 'yaml';

const { values } = parseArgs({
  options: { iterations: { type: 'string', default: '20000' }, json: { type: 'boolean', default: false } },
});
const iterations = Number(values.iterations);

// A classify task as the email integration writes it, and a done one with a result of some size.
const id = newTaskId();
const pending = `id: ${id}
type: email.inbox.classify
priority: 6
created_at: 2026-11-23T16:00:00.000Z
ready_at: 2026-11-23T16:00:00.000Z
source: automation
integration: personal
payload:
  note: email/personal/INBOX/1234-5678.md
  uid: 5678
  subject: "Lisbon apartment: a few questions before we sign"
attempts: 0
max_attempts: 3
`;
const name: TaskName = {
  priority: 6,
  readyAtMs: Date.parse('2026-11-23T16:00:00.000Z'),
  id,
  fingerprint: '0123456789abcdef',
  type: 'email.inbox.classify',
};
const result = {
  classifications: { human: 0.93, requires_response: true, newsletter: false, urgent: false },
  reasons: Array.from({ length: 8 }, (_, index) => `reason ${index}: the sender asks about the lease and a date`),
};
for (const secret of ['sk-test-0123456789abcdef', 'imap-password-42', 'server-token-abcdefghijkl']) {
  registerSecretValue(secret);
}

function time(name: string, run: () => unknown): { name: string; microseconds: number } {
  for (let index = 0; index < Math.min(2000, iterations); index += 1) run();
  const started = performance.now();
  for (let index = 0; index < iterations; index += 1) run();
  return { name, microseconds: ((performance.now() - started) * 1000) / iterations };
}

const rows = [
  time('nesting pre-scan (yamlTextNestingDepth)', () => yamlTextNestingDepth(pending)),
  time('YAML parse (parseDocument + toJS)', () => parseDocument(pending).toJS()),
  time('parseTaskFile (pre-scan, parse, zod)', () => parseTaskFile(pending, { name, defaultMaxAttempts: 3 })),
  time('scrubSecretsDeep of a result (3 secrets)', () => scrubSecretsDeep(result)),
];
if (values.json) console.log(JSON.stringify({ iterations, rows }));
else {
  console.log(`${iterations} iterations each, a ${Buffer.byteLength(pending)}-byte task file`);
  for (const row of rows) console.log(`${row.name.padEnd(44)} ${row.microseconds.toFixed(1).padStart(7)} µs`);
}
