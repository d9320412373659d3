import type { RunnerConfig } from './kubernetes-config.ts';

/** "docker (each turn a container on the local engine)" or where the Kubernetes runner puts its pods. */
export function describeRunner(runner: RunnerConfig): string {
  if (runner.kind === 'docker') return 'docker (each turn a container on the local engine)';
  const k = runner.kubernetes;
  return (
    `kubernetes (each turn a pod in namespace ${k.namespace}, ${k.kubeconfig ? `kubeconfig ${k.kubeconfig}` : 'in-cluster'}` +
    `${k.runtime_class ? `, runtime class ${k.runtime_class}` : ''}, gateway ${k.gateway_address ?? 'unset'})`
  );
}
