import type { RunnerConfig } from './kubernetes-config.ts';

/**
 * The one place a start picks its runner. Only Docker runs turns yet: a host configured for Kubernetes
 * refuses to start rather than run its groups somewhere the owner did not choose.
 */
export function assertRunnerAvailable(runner: RunnerConfig): void {
  if (runner.kind === 'docker') return;
  throw new Error(
    '[runner] kind = "kubernetes" cannot run turns yet: the Kubernetes runner is not built (only its config, ' +
      'pod spec and doctor check are; see DESIGN.md "Kubernetes runner"). Set kind = "docker" under [runner] ' +
      'to run on the local Docker engine.',
  );
}
