import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { KubeConfig } from '@kubernetes/client-node';
import { CoreV1Api, NetworkingV1Api, Watch, type V1Pod } from '@kubernetes/client-node';
import { startFakeKubeApi, type FakeKubeApi } from '../../../fakes/kube-api/fake-kube-api.ts';
import { agentPodSpec, gatewayNetworkPolicy } from '../../../../host/containers/kubernetes/pod-spec.ts';
import { checkCluster } from '../../../../host/containers/kubernetes/cluster-check.ts';
import { loadKubeConfig } from '../../../../host/containers/kubernetes/kube-config.ts';
import { useTempDirs } from '../../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
let api: FakeKubeApi;
let kc: KubeConfig;

beforeEach(async () => {
  api = await startFakeKubeApi();
  kc = loadKubeConfig({ kubeconfig: api.writeKubeconfig(tempDir()) });
});
afterEach(async () => {
  await api.close();
});

const pod = (runId: number) =>
  agentPodSpec({
    namespace: 'carapace',
    dataFolderId: 'a1b2c3d4e5f60718',
    hostInstanceId: 'host-1',
    runId,
    groupId: 'main',
    image: 'carapace-agent:test',
    resources: { cpu: 1, memoryMb: 256, scratchMb: 64 },
    quotas: { groupMb: 64, sessionMb: 16 },
    hardTimeoutMs: 60_000,
    env: { TZ: 'UTC' },
  });

/** The events of a pod watch until `count` arrived, through the client's own Watch. */
function watchEvents(path: string, query: Record<string, string | boolean>, count: number) {
  const seen: { type: string; object: V1Pod }[] = [];
  let stop: (() => void) | undefined;
  const done = new Promise<{ type: string; object: V1Pod }[]>((resolve, reject) => {
    void new Watch(kc)
      .watch(
        path,
        query,
        (type, object: V1Pod) => {
          seen.push({ type, object });
          if (seen.length === count) resolve(seen);
        },
        (err) => (err ? reject(err as Error) : resolve(seen)),
      )
      .then((controller) => (stop = () => controller.abort()), reject);
  });
  return { done, stop: () => stop?.() };
}

describe('the fake Kubernetes API, driven by @kubernetes/client-node', () => {
  it('accepts the runner’s pod and policy, and refuses a pod the restricted standard forbids', async () => {
    const core = kc.makeApiClient(CoreV1Api);
    const created = await core.createNamespacedPod({ namespace: 'carapace', body: pod(1) });
    expect(created.status?.phase).toBe('Pending');
    await kc.makeApiClient(NetworkingV1Api).createNamespacedNetworkPolicy({
      namespace: 'carapace',
      body: gatewayNetworkPolicy({
        namespace: 'carapace',
        dataFolderId: 'a1b2c3d4e5f60718',
        gatewayAddress: '10.0.0.1:8787',
      }),
    });
    expect(api.policies()).toHaveLength(1);

    const weak = pod(2);
    weak.spec!.containers[1]!.securityContext!.capabilities = { drop: ['ALL'], add: ['SYS_ADMIN'] };
    await expect(core.createNamespacedPod({ namespace: 'carapace', body: weak })).rejects.toMatchObject({
      code: 422,
      body: expect.stringContaining('adds capability SYS_ADMIN'),
    });
    const invalid = pod(3) as unknown as { spec: { activeDeadlineSeconds: unknown } };
    invalid.spec.activeDeadlineSeconds = 'soon';
    await expect(
      core.createNamespacedPod({ namespace: 'carapace', body: invalid as V1Pod }),
    ).rejects.toMatchObject({ code: 422, body: expect.stringContaining('activeDeadlineSeconds') });
    expect(api.pods().map((p) => p.metadata!.name)).toEqual(['carapace-a1b2c3d4e5f60718-1']);
  });

  it('lists and deletes by label, and a watch sees the pod become ready, bookmarks included', async () => {
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedPod({ namespace: 'carapace', body: pod(1) });
    const list = await core.listNamespacedPod({
      namespace: 'carapace',
      labelSelector: 'carapace.data=a1b2c3d4e5f60718',
    });
    expect(list.items).toHaveLength(1);
    expect(
      (await core.listNamespacedPod({ namespace: 'carapace', labelSelector: 'carapace.data=other' })).items,
    ).toHaveLength(0);

    const opened = api.watchOpened();
    const watch = watchEvents(
      '/api/v1/namespaces/carapace/pods',
      {
        labelSelector: 'carapace.run=1',
        resourceVersion: list.metadata!.resourceVersion!,
        allowWatchBookmarks: true,
      },
      3,
    );
    await opened;
    api.setPhase('carapace', 'carapace-a1b2c3d4e5f60718-1', 'Running');
    api.bookmark();
    await core.deleteNamespacedPod({ namespace: 'carapace', name: 'carapace-a1b2c3d4e5f60718-1' });
    const events = await watch.done;
    watch.stop();
    expect(events.map((e) => [e.type, e.object.status?.phase])).toEqual([
      ['MODIFIED', 'Running'],
      ['BOOKMARK', undefined],
      ['DELETED', 'Running'],
    ]);
    expect(api.pods()).toEqual([]);
  });

  it('answers a watch from a compacted resource version with 410 Expired, so the client must list again', async () => {
    const core = kc.makeApiClient(CoreV1Api);
    const before = (await core.listNamespacedPod({ namespace: 'carapace' })).metadata!.resourceVersion!;
    await core.createNamespacedPod({ namespace: 'carapace', body: pod(1) });
    api.compact();
    const watch = watchEvents('/api/v1/namespaces/carapace/pods', { resourceVersion: before }, 1);
    const [event] = await watch.done;
    expect(event!.type).toBe('ERROR');
    expect(event!.object).toMatchObject({ code: 410, reason: 'Expired' });
  });
});

describe('doctor’s cluster check', () => {
  const unenforced = async () => ({
    enforced: false,
    detail: 'NetworkPolicy is not enforced: a probe pod under the gateway-only policy reached 10.0.0.9:443',
    fix: 'use a network plugin that enforces NetworkPolicy',
  });

  it('passes only when the probe proves the policy enforced, and fails closed with its reason otherwise', async () => {
    const result = await checkCluster(kc, 'carapace', unenforced);
    expect(result).toMatchObject({ ok: false, fix: 'use a network plugin that enforces NetworkPolicy' });
    expect(result.detail).toMatch(/pods and NetworkPolicies are readable; NetworkPolicy is not enforced/);
    const enforced = await checkCluster(kc, 'carapace', async () => ({ enforced: true, detail: 'enforced' }));
    expect(enforced.ok).toBe(true);
  });

  it('names a missing grant and how to give it', async () => {
    api.forbid('networkpolicies');
    const result = await checkCluster(kc, 'carapace', unenforced);
    expect(result).toMatchObject({ ok: false, detail: expect.stringMatching(/NetworkPolicies.*HTTP 403/) });
    expect(result.fix).toMatch(/networkpolicies in namespace carapace/);
    api.forbid('pods');
    expect((await checkCluster(kc, 'carapace', unenforced)).detail).toMatch(
      /cannot list pods.*HTTP 403.*forbidden/,
    );
  });

  it('says the cluster cannot be reached when nothing answers', async () => {
    await api.close();
    const result = await checkCluster(kc, 'carapace', unenforced);
    expect(result.ok).toBe(false);
    expect(result.detail).toMatch(/cannot list pods in namespace carapace at http:\/\/127\.0\.0\.1/);
    expect(result.fix).toMatch(/kubeconfig/);
    api = await startFakeKubeApi();
  });
});
