import { configDefaults, defineConfig } from 'vitest/config';

/** Both projects: the suites wait for containers and child processes. */
const timeouts = { testTimeout: 30_000, hookTimeout: 120_000 };

export default defineConfig({
  test: {
    // The root project's global setup runs once for the whole run (the projects below do not repeat it).
    globalSetup: ['test/global-setup.ts'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          ...timeouts,
          // One module registry per worker process instead of one per file: most of a unit file's time was
          // importing the host's modules again. Safe because the code keeps no module-level mutable state
          // (HOUSE.md) and no unit test mocks modules, fakes timers, sets process.env or changes directory;
          // a file that starts one of those must restore it in its own hooks.
          pool: 'forks',
          isolate: false,
        },
      },
      {
        test: {
          name: 'suites',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/unit/**'],
          ...timeouts,
          // Separate processes: these suites start servers, containers and child processes, and a crash or a
          // leaked handle in one must not take the others down.
          pool: 'forks',
        },
      },
    ],
  },
});
