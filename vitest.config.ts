import { defineConfig } from 'vitest/config';

/**
 * Two tiers (README "Testing"):
 * - `unit`: the tests beside the code in each workspace package. In-process only: no child processes, no root, no
 *   Dovecot, no bubblewrap, nothing that takes seconds. `npm run test:unit` runs them in under a minute.
 * - `integration`: `tests/`, which starts the CLI, server and worker as real processes, a private Dovecot and
 *   bubblewrap. `npm run test:integration` runs them; `npm test` runs both.
 */
export default defineConfig({
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['{apps,packages,integrations}/*/src/**/*.test.ts'],
          // Fails a unit test that starts a child process: those belong in tests/.
          setupFiles: ['tests/helpers/unit-tier-guard.ts'],
          // The default 5 s leaves little room when four test runs share 2 cores; a unit test is far below either.
          testTimeout: 15_000,
          hookTimeout: 15_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['tests/**/*.test.ts'],
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
