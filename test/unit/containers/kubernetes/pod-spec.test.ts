import { describe, expect, it } from 'vitest';
import { Pod } from 'kubernetes-models/v1/Pod';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { V1Pod } from '@kubernetes/client-node';
import {
  agentPodSpec,
  gatewayNetworkPolicy,
  PodSpecError,
  type AgentPodInput,
} from '../../../../host/containers/kubernetes/pod-spec.ts';
import { restrictedViolations } from '../../../fakes/kube-api/pod-security.ts';

const input = (over: Partial<AgentPodInput> = {}): AgentPodInput => ({
  namespace: 'carapace',
  dataFolderId: 'a1b2c3d4e5f60718',
  hostInstanceId: '3f0c1d7e-8a8b-4c1e-9f00-1234567890ab',
  runId: 42,
  groupId: '120363040000000000@g.us',
  image: 'registry.example/carapace-agent:1',
  resources: { cpu: 1, memoryMb: 1024, scratchMb: 256 },
  quotas: { groupMb: 1024, sessionMb: 256 },
  hardTimeoutMs: 1_800_500,
  env: { TZ: 'Europe/Berlin' },
  ...over,
});

/** Every string anywhere in an object, keys included. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => [k, ...strings(v)]);
  }
  return [];
}

const clone = (pod: V1Pod): V1Pod => structuredClone(pod);

describe('the agent pod', () => {
  it('passes Kubernetes’ published Pod schema, for a plain run and with a runtime class', () => {
    expect(() => new Pod(agentPodSpec(input()) as never).validate()).not.toThrow();
    expect(() => new Pod(agentPodSpec(input({ runtimeClass: 'gvisor' })) as never).validate()).not.toThrow();
  });

  it('the schema check can fail: a uid given as text is refused', () => {
    const pod = clone(agentPodSpec(input()));
    (pod.spec!.containers[0]!.securityContext as Record<string, unknown>).runAsUser = '10001';
    expect(() => new Pod(pod as never).validate()).toThrow(/runAsUser must be integer/);
  });

  it('meets the restricted Pod Security Standard, and the check names what a weaker pod breaks', () => {
    expect(restrictedViolations(agentPodSpec(input()))).toEqual([]);
    const weak = clone(agentPodSpec(input()));
    weak.spec!.hostPID = true;
    weak.spec!.containers[1]!.securityContext!.capabilities = { drop: ['ALL'], add: ['SETUID'] };
    weak.spec!.containers[0]!.securityContext!.allowPrivilegeEscalation = true;
    weak.spec!.volumes!.push({ name: 'h', hostPath: { path: '/' } });
    expect(restrictedViolations(weak)).toEqual([
      'hostPID',
      'volume h of type hostPath',
      'container agent: allowPrivilegeEscalation not false',
      'container commands: adds capability SETUID',
    ]);
  });

  it('mounts no service account token, uses no host namespace and no DNS, and ends at the hard timeout', () => {
    const spec = agentPodSpec(input()).spec!;
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.enableServiceLinks).toBe(false);
    expect([spec.hostNetwork, spec.hostPID, spec.hostIPC]).toEqual([false, false, false]);
    expect(spec.restartPolicy).toBe('Never');
    // 1800.5 s rounds up: the kubelet never stops a run before its own hard timeout would.
    expect(spec.activeDeadlineSeconds).toBe(1801);
    expect(spec.dnsPolicy).toBe('None');
    expect(spec.runtimeClassName).toBeUndefined();
    expect(agentPodSpec(input({ runtimeClass: 'gvisor' })).spec!.runtimeClassName).toBe('gvisor');
  });

  it('runs the two principals as two non-root uids in two containers with no shared process namespace', () => {
    const spec = agentPodSpec(input()).spec!;
    expect(spec.shareProcessNamespace).toBe(false);
    expect(spec.containers.map((c) => c.name)).toEqual(['agent', 'commands', 'session']);
    const [agent, commands, keeper] = spec.containers as [
      NonNullable<(typeof spec.containers)[0]>,
      NonNullable<(typeof spec.containers)[0]>,
      NonNullable<(typeof spec.containers)[0]>,
    ];
    // The session's keeper is the agent's principal (its uid) and sees the session volume alone.
    expect(keeper.securityContext!.runAsUser).toBe(10001);
    expect(keeper.volumeMounts!.map((m) => m.name)).toEqual(['session']);
    expect(keeper.stdin).toBe(false);
    expect(agent.securityContext!.runAsUser).toBe(10001);
    expect(commands.securityContext!.runAsUser).toBe(10002);
    // The agent's gid on both: what either writes in the group folder stays writable by the other.
    expect(commands.securityContext!.runAsGroup).toBe(agent.securityContext!.runAsGroup);
    for (const c of spec.containers) {
      expect(c.securityContext).toMatchObject({
        runAsNonRoot: true,
        allowPrivilegeEscalation: false,
        privileged: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(c.securityContext!.capabilities!.add).toBeUndefined();
    }
    // Only the agent's stdin is open (the IPC stream); closing it ends the agent, as with Docker.
    expect([agent.stdin, agent.stdinOnce, commands.stdin]).toEqual([true, true, false]);
    // The conversation history is the agent's alone, as the session folder's mode 0700 makes it under Docker.
    expect(commands.volumeMounts!.map((m) => m.name)).not.toContain('session');
  });

  it('shares only emptyDirs, each with a size limit, and limits cpu, memory and ephemeral storage', () => {
    const spec = agentPodSpec(input()).spec!;
    for (const v of spec.volumes!) {
      expect(Object.keys(v).sort()).toEqual(['emptyDir', 'name']);
      expect(v.emptyDir!.sizeLimit).toMatch(/^\d+Mi$/);
    }
    expect(spec.volumes!.find((v) => v.name === 'group')!.emptyDir!.sizeLimit).toBe('1024Mi');
    for (const c of spec.containers) {
      expect(c.resources!.limits).toEqual(
        c.name === 'session'
          ? { cpu: '100m', memory: '32Mi', 'ephemeral-storage': '8Mi' }
          : { cpu: '1', memory: '1024Mi', 'ephemeral-storage': '1536Mi' },
      );
      expect(c.resources!.requests).toEqual(c.resources!.limits);
    }
  });

  it('holds no key, token or secret: the env is refused when a name looks like one', () => {
    for (const name of ['CARAPACE_GATEWAY_KEY', 'GITHUB_TOKEN', 'DB_PASSWORD', 'client_secret']) {
      expect(() => agentPodSpec(input({ env: { TZ: 'UTC', [name]: 'x' } }))).toThrow(PodSpecError);
    }
    // The one such word is the field that turns the service account token off.
    const all = strings(agentPodSpec(input()));
    expect(all.filter((s) => /key|token|secret|passw|credential/i.test(s))).toEqual([
      'automountServiceAccountToken',
    ]);
    // No secret-bearing volume and no env drawn from one.
    const spec = agentPodSpec(input()).spec!;
    expect(JSON.stringify(spec)).not.toMatch(/secretKeyRef|"secret"|projected|serviceAccount"/);
  });

  it('labels the pod for cleanup by data folder and host, with a group id a label cannot hold kept in an annotation', () => {
    const pod = agentPodSpec(input());
    expect(pod.metadata!.name).toBe('carapace-a1b2c3d4e5f60718-42');
    expect(pod.metadata!.labels).toEqual({
      'app.kubernetes.io/managed-by': 'carapace',
      'carapace.data': 'a1b2c3d4e5f60718',
      'carapace.host': '3f0c1d7e-8a8b-4c1e-9f00-1234567890ab',
      'carapace.run': '42',
      'carapace.group': '120363040000000000-g.us',
    });
    expect(pod.metadata!.annotations!['carapace.dev/group-id']).toBe('120363040000000000@g.us');
  });
});

describe('the gateway-only NetworkPolicy', () => {
  it('passes the published schema, takes no ingress and allows egress only to the gateway’s port by IP', () => {
    const policy = gatewayNetworkPolicy({
      namespace: 'carapace',
      dataFolderId: 'a1b2c3d4e5f60718',
      gatewayAddress: '10.96.0.20:8787',
    });
    expect(() => new NetworkPolicy(policy as never).validate()).not.toThrow();
    expect(policy.spec!.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec!.ingress).toEqual([]);
    expect(policy.spec!.egress).toEqual([
      { to: [{ ipBlock: { cidr: '10.96.0.20/32' } }], ports: [{ protocol: 'TCP', port: 8787 }] },
    ]);
    // It selects exactly the data folder's pods (the labels the pod carries), not every pod of the namespace.
    const podLabels = agentPodSpec(input()).metadata!.labels!;
    const selector = policy.spec!.podSelector!.matchLabels!;
    expect(Object.keys(selector).length).toBeGreaterThan(0);
    for (const [k, v] of Object.entries(selector)) expect(podLabels[k]).toBe(v);
  });

  it('selects the gateway’s pods by label when it runs in the cluster', () => {
    const policy = gatewayNetworkPolicy({
      namespace: 'carapace',
      dataFolderId: 'a1b2c3d4e5f60718',
      gatewayAddress: '10.96.0.20:8787',
      gatewayPodLabels: { app: 'carapace-host' },
    });
    expect(() => new NetworkPolicy(policy as never).validate()).not.toThrow();
    expect(policy.spec!.egress![0]!.to).toEqual([{ podSelector: { matchLabels: { app: 'carapace-host' } } }]);
  });
});
