import { describe, expect, it } from 'vitest';
import { runnerConfigSchema } from '../../../../host/containers/kubernetes/kubernetes-config.ts';
import {
  assertRunnerAvailable,
  describeRunner,
} from '../../../../host/containers/kubernetes/runner-choice.ts';

const kubernetes = runnerConfigSchema.parse({
  kind: 'kubernetes',
  kubernetes: {
    image: 'registry.example/agent:1',
    gateway_address: '10.0.0.1:8787',
    runtime_class: 'gvisor',
  },
});

describe('choosing the runner at start', () => {
  it('lets Docker start, and refuses Kubernetes until its runner exists rather than fall back silently', () => {
    expect(() => assertRunnerAvailable(runnerConfigSchema.parse({}))).not.toThrow();
    expect(() => assertRunnerAvailable(kubernetes)).toThrow(
      /kind = "kubernetes" cannot run turns yet.*Set kind = "docker"/,
    );
  });

  it('status names the runner and, for Kubernetes, where its pods would go and that it does not start', () => {
    expect(describeRunner(runnerConfigSchema.parse({}))).toBe(
      'docker (each turn a container on the local engine)',
    );
    expect(describeRunner(kubernetes)).toMatch(
      /^kubernetes \(namespace carapace, in-cluster, runtime class gvisor\); not built yet/,
    );
  });
});
