import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Docker-backed suites share one engine; running files in parallel on two cores
    // mostly adds contention, so integration files opt into isolation themselves.
    pool: 'forks',
  },
});
