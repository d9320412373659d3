import type { ContainerSpec } from '../../host/containers/run/container-spec.ts';

/**
 * Container specs for tests that drive the Docker runtime directly: one run id per spec, every container
 * labelled with the test run (so a test removes only what it made), small limits, long timeouts. The image
 * is read at each call because suites learn it in `beforeAll`.
 */
export function containerSpecs(opts: {
  groupId: string;
  testRun: string;
  image: () => string;
  cpus?: number;
}): (overrides?: Partial<ContainerSpec>) => ContainerSpec {
  let made = 0;
  return (overrides = {}) => {
    made += 1;
    return {
      groupId: opts.groupId,
      runId: `${opts.testRun}-${made}`,
      image: opts.image(),
      mounts: [],
      env: {},
      network: { mode: 'full' },
      limits: { memoryMb: 256, cpus: opts.cpus ?? 1, pids: 64 },
      timeouts: { hardMs: 60_000, idleMs: 60_000, graceMs: 500 },
      labels: { 'carapace.test': opts.testRun },
      hostInstanceId: `test-host-${opts.testRun}`,
      ...overrides,
    };
  };
}
