import os from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Unit test files that need modules evaluated afresh for them: two replace a built-in module with `vi.mock`; the
 * housekeeping one makes chat messages "two days ago", which the chat package's per-process id clock (ids never go
 * back in time within a process) turns into now once another file in the same worker made an id.
 */
const freshModules = [
  'packages/notes/src/file-lock.test.ts',
  'packages/queue/src/crash-states.test.ts',
  'apps/worker/src/chat-compaction-housekeeping.test.ts',
];

const unit = {
  // Fails a unit test that starts a child process: those belong in tests/.
  setupFiles: ['tests/helpers/unit-tier-guard.ts'],
  // The default 5 s leaves little room when four test runs share 2 cores; a unit test is far below either.
  testTimeout: 15_000,
  hookTimeout: 15_000,
};

/**
 * Two tiers (README "Testing"):
 * - `unit` (and `unit-isolated`): the tests beside the code in each workspace package. In-process only: no child
 *   processes, no root, no Dovecot, no bubblewrap, nothing that takes seconds. `npm run test:unit` runs both
 *   projects (docs/performance.md, "Issue 38: a quick suite").
 * - `integration`: `tests/`, which starts the CLI, server and worker as real processes, a private Dovecot and
 *   bubblewrap. `npm run test:integration` runs them; `npm test` runs both.
 */
export default defineConfig({
  test: {
    projects: [
      {
        extends: true,
        test: {
          ...unit,
          name: 'unit',
          include: ['{apps,packages,integrations}/*/src/**/*.test.ts'],
          exclude: freshModules,
          // Decision 0080: each worker imports the packages once and runs file after file, instead of a fresh
          // worker re-importing them for each of the ~280 files (that was about half the tier's CPU). It relies on
          // unit tests leaving no global state behind: timers restored, no `vi.mock` (those files run below, as does one
          // that needs the chat package's id clock fresh).
          isolate: false,
          // Vitest's default for a run is one worker fewer than the cores: a single worker on 2 cores, idle while
          // a test waits on a file, a loopback socket or a timer. Unit tests spend about half their time waiting, so
          // two workers a core keep the cores busy: on 2 cores, 86 s with 2 workers, 72 s with 3, 60 s with 4, and
          // no faster with 5 or 6 (docs/performance.md, "Issue 38: a quick suite").
          maxWorkers: 2 * os.availableParallelism(),
        },
      },
      {
        extends: true,
        test: {
          ...unit,
          name: 'unit-isolated',
          include: freshModules,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['tests/**/*.test.ts'],
          // Most of these tests wait on the processes they start, not on the CPU: one file at a time (vitest's
          // default on 2 cores) took 21–23 min in CI, two at a time 11.4 min with the cores ~76 % busy
          // (docs/performance.md, "Issue 38: a quick suite"). Each file still has its own temp dirs and free ports.
          maxWorkers: Math.max(2, os.availableParallelism()),
          // Child-process tests start real servers; give them room on a shared 2-core machine.
          testTimeout: 30_000,
          hookTimeout: 30_000,
          // `expect.poll` waits on another process (a page's live stream, a file a worker writes): its default 1 s
          // is less than a request can take on a loaded CI machine, where every write is fsynced (the event ledger
          // too). A poll still ends as soon as its condition holds.
          expect: { poll: { timeout: 10_000 } },
        },
      },
    ],
  },
});
