import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['{apps,packages,integrations}/*/src/**/*.test.ts', 'tests/**/*.test.ts'],
    // Child-process tests start real servers; give them room on a shared 2-core machine.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
