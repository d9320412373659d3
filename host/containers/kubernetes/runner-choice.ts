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

/** "docker (each turn a container on the local engine)" or where a Kubernetes runner would put its pods. */
export function describeRunner(runner: RunnerConfig): string {
  if (runner.kind === 'docker') return 'docker (each turn a container on the local engine)';
  const k = runner.kubernetes;
  return (
    `kubernetes (namespace ${k.namespace}, ${k.kubeconfig ? `kubeconfig ${k.kubeconfig}` : 'in-cluster'}` +
    `${k.runtime_class ? `, runtime class ${k.runtime_class}` : ''}); not built yet, so the host does not ` +
    'start with it (carapace doctor checks the cluster)'
  );
}
