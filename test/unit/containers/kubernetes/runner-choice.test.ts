import { describe, expect, it } from 'vitest';
import { runnerConfigSchema } from '../../../../host/containers/kubernetes/kubernetes-config.ts';
import { describeRunner } from '../../../../host/containers/kubernetes/runner-choice.ts';

const kubernetes = runnerConfigSchema.parse({
  kind: 'kubernetes',
  kubernetes: {
    image: 'registry.example/agent:1',
    gateway_address: '10.0.0.1:8787',
    runtime_class: 'gvisor',
  },
});

describe('choosing the runner at start', () => {
  it('status names the runner and, for Kubernetes, where its pods go and where they reach the gateway', () => {
    expect(describeRunner(runnerConfigSchema.parse({}))).toBe(
      'docker (each turn a container on the local engine)',
    );
    expect(describeRunner(kubernetes)).toBe(
      'kubernetes (each turn a pod in namespace carapace, in-cluster, runtime class gvisor, gateway 10.0.0.1:8787)',
    );
  });
});
