import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Separate processes: suites start servers, containers and child processes, and a crash or a
    // leaked handle in one must not take the others down.
    pool: 'forks',
  },
});
