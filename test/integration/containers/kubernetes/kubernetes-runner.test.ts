/**
 * The Kubernetes runner end to end without a cluster: the real `@kubernetes/client-node` against the fake API
 * server, whose pods are real Docker containers of the real agent image, reaching the real gateway in front
 * of a fake provider. A turn's reply comes back over the pod's attach stream, the pod holds no key, and
 * every pod is gone when its run is.
 *
 * The fake's pods join a Docker network that stands for the cluster's network plugin: the isolated gateway
 * network (behind the host's firewall: only the gateway's port) for a cluster that enforces the policy,
 * Docker's bridge for one that ignores it. The runner's start probe must tell the two apart.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import pino from 'pino';
import { Attach, CoreV1Api, Exec, NetworkingV1Api, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { containersConfigSchema } from '../../../../host/containers/run/container-config.ts';
import { ensureAgentImage } from '../../../../host/containers/image/image-ensure.ts';
import { defaultBridgeAddress } from '../../../../host/containers/network/network-gateway.ts';
import { setUpRunNetworks } from '../../../../host/containers/network/run-networks.ts';
import {
  createKubernetesAgentRunner,
  type KubernetesAgentRunner,
} from '../../../../host/containers/kubernetes/kubernetes-agent-runner.ts';
import { kubernetesRunnerConfigSchema } from '../../../../host/containers/kubernetes/kubernetes-config.ts';
import { loadKubeConfig } from '../../../../host/containers/kubernetes/kube-config.ts';
import { probeNetworkPolicy } from '../../../../host/containers/kubernetes/network-probe.ts';
import { agentPodSpec, gatewayNetworkPolicy } from '../../../../host/containers/kubernetes/pod-spec.ts';
import { gatewayConfigSchema, providerConfigSchema } from '../../../../host/gateway/config.ts';
import { createGateway, type Gateway } from '../../../../host/gateway/gateway.ts';
import type { RunOutcome } from '../../../../host/router/agent-runner.ts';
import type { GroupRecord } from '../../../../host/store/groups-store.ts';
import { systemClock } from '../../../../host/time/clock.ts';
import { createDockerPods } from '../../../fakes/kube-api/docker-pods.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../fakes/kube-api/fake-kube-api.ts';
import { createMemoryUsageStore } from '../../../fakes/memory-usage-store.ts';
import { reply, startFakeProvider, type FakeProvider } from '../../../fakes/fake-provider.ts';
import { describeDocker } from '../../../helpers/docker-available.ts';
import { replyOnlyHandlers } from '../../../helpers/reply-only-handlers.ts';
import { useTempDirs } from '../../../helpers/temp-dir.ts';

const docker = new Docker();
const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const testRun = randomUUID().slice(0, 8);
const PROVIDER_KEY = 'sk-kube-test-provider-key';
const tempDir = useTempDirs();
const silent = pino({ level: process.env.KUBE_TEST_LOG ?? 'silent' });

let fake: FakeProvider;
let gateway: Gateway;
/** Pods on the isolated gateway network: a cluster that enforces the policy. */
let api: FakeKubeApi;
/** Pods on Docker's bridge: a cluster whose network plugin ignores NetworkPolicy. */
let unenforcing: FakeKubeApi;
let runner: KubernetesAgentRunner;
let image = '';
let gatewayAddress = '';
/** A TCP server on the host that any unrestricted container reaches: the probe's forbidden address. */
let outside: net.Server;
let outsideAddress = '';
const cleanups: (() => Promise<unknown>)[] = [];
let nextRunId = 1;
let groupsDir = '';
const issuedKeys: string[] = [];

function group(id: string): GroupRecord {
  return {
    id,
    channel: 'local',
    chatId: id,
    name: id,
    isAdmin: false,
    networkMode: 'gateway',
    agentCursor: 0,
    createdAt: new Date().toISOString(),
    taint: { corruption: false, secret: false },
  };
}

/** A runner on the fake API server `on`, made as the host makes it for `[runner] kind = "kubernetes"`. */
function runnerOn(on: FakeKubeApi): KubernetesAgentRunner {
  const kc = loadKubeConfig({ kubeconfig: on.writeKubeconfig(tempDir()) });
  const clients = {
    core: kc.makeApiClient(CoreV1Api),
    networking: kc.makeApiClient(NetworkingV1Api),
    attach: new Attach(kc),
    exec: new Exec(kc),
    watch: new Watch(kc),
  };
  const cluster = kubernetesRunnerConfigSchema.parse({
    image,
    gateway_address: gatewayAddress,
    resources: { memory_mb: 256, scratch_mb: 32 },
  });
  const scope = { dataFolderId: `k${testRun}`, hostInstanceId: `kube-${testRun}` };
  return createKubernetesAgentRunner({
    ...scope,
    api: clients,
    groupDir: (groupId) => path.join(groupsDir, groupId),
    cluster: { ...cluster, image, gateway_address: gatewayAddress },
    containers: containersConfigSchema.parse({
      group_quota_mb: 64,
      session_quota_mb: 16,
      stop_grace_ms: 500,
    }),
    clock: systemClock,
    probe: () =>
      probeNetworkPolicy(
        clients,
        { ...scope, namespace: cluster.namespace, image, gatewayAddress, forbiddenAddress: outsideAddress },
        systemClock,
      ),
    gateway: {
      issueKey: (owner) => {
        const key = gateway.issueKey(owner);
        issuedKeys.push(key.key);
        return key;
      },
      baseUrlFor: (address) => gateway.baseUrlFor(address),
      credentialsUrlFor: (address) => gateway.credentialsUrlFor(address),
    },
    groupById: (id) => group(id),
    startParams: () => ({
      assistantName: 'Andy',
      timezone: 'UTC',
      formatting: 'Plain text.',
      limits: { maxToolSteps: 3, maxOutputTokens: 256, wallTimeMs: 60_000 },
      model: 'fake-model',
    }),
    env: () => ({ TZ: 'UTC' }),
    handlersFor: (_identity, callbacks, onDone) =>
      replyOnlyHandlers(callbacks, onDone, {
        'security.bash_check': ({ command }) =>
          command.startsWith('id -u;')
            ? { decision: 'allow' as const, reason: 'test command' }
            : { decision: 'deny' as const, reason: 'no other commands in this test' },
      }),
    onProtocolProblem: () => undefined,
    onRunEnded: () => undefined,
    logger: silent,
  });
}

function startRun(on: KubernetesAgentRunner, g: GroupRecord, text: string) {
  const replies: string[] = [];
  const runId = nextRunId++;
  const handle = on.start(
    {
      runId,
      attempt: 1,
      group: g,
      messages: [
        {
          id: runId,
          groupId: g.id,
          channel: 'local',
          chatId: g.id,
          externalId: `m${runId}`,
          senderId: 'ann',
          senderName: 'Ann',
          text,
          sentAt: new Date().toISOString(),
          triggers: true,
        },
      ],
    },
    { reply: async (t) => void replies.push(t), sendToGroup: async () => undefined },
  );
  return { runId, replies, handle };
}

await describeDocker('the Kubernetes runner on the fake API server', () => {
  beforeAll(async () => {
    image = (await ensureAgentImage({ docker, projectRoot })).tag;
    groupsDir = tempDir();
    fake = await startFakeProvider({ apiKey: PROVIDER_KEY });
    gateway = createGateway({
      config: () => gatewayConfigSchema.parse({}),
      provider: providerConfigSchema.parse({ base_url: fake.openaiBaseUrl, model: 'fake-model' }),
      providerApiKey: PROVIDER_KEY,
      usageStore: createMemoryUsageStore(),
      clock: systemClock,
      timezone: () => 'UTC',
      maxOutputTokens: 256,
      logger: silent,
    });
    const bridge = await defaultBridgeAddress(docker);
    const { networks } = await setUpRunNetworks({
      docker,
      gateway,
      configuredName: `carapace-kube-${testRun}`,
      dataDir: tempDir(),
      dataLabel: `k${testRun}`,
      hostInstanceId: `kube-${testRun}`,
      onNetwork: (_name, remove) => void cleanups.push(remove),
      logger: silent,
    });
    if ('unavailable' in networks.gateway) throw new Error(networks.gateway.unavailable);
    gatewayAddress = `${networks.gateway.hostAddress}:${gateway.port}`;
    outside = net.createServer((socket) => socket.end());
    await new Promise<void>((resolve) => outside.listen(0, bridge, resolve));
    outsideAddress = `${bridge}:${(outside.address() as net.AddressInfo).port}`;
    const labels = { 'carapace.test': testRun };
    api = await startFakeKubeApi({
      pods: createDockerPods({ docker, network: networks.gateway.networkName, labels }),
    });
    unenforcing = await startFakeKubeApi({ pods: createDockerPods({ docker, network: 'bridge', labels }) });
    // A policy left by an earlier start with another gateway: the runner must put its own rules in place.
    const stale = loadKubeConfig({ kubeconfig: api.writeKubeconfig(tempDir()) });
    await stale.makeApiClient(NetworkingV1Api).createNamespacedNetworkPolicy({
      namespace: 'carapace',
      body: gatewayNetworkPolicy({
        namespace: 'carapace',
        dataFolderId: `k${testRun}`,
        gatewayAddress: '10.9.9.9:1',
      }),
    });
    // A pod of this data folder left by an earlier host process that was killed: the runner removes it.
    const leftover = agentPodSpec({
      namespace: 'carapace',
      dataFolderId: `k${testRun}`,
      hostInstanceId: 'an-earlier-host',
      runId: 999,
      groupId: 'kube-old',
      image,
      resources: { cpu: 1, memoryMb: 256, scratchMb: 32 },
      quotas: { groupMb: 64, sessionMb: 16 },
      hardTimeoutMs: 60_000,
      env: { TZ: 'UTC', OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' },
    });
    await stale.makeApiClient(CoreV1Api).createNamespacedPod({ namespace: 'carapace', body: leftover });
    runner = runnerOn(api);
  }, 5 * 60_000);

  afterAll(async () => {
    await runner?.close();
    await api?.close();
    await unenforcing?.close();
    outside?.close();
    await gateway?.close();
    await fake?.close();
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  }, 60_000);

  it('answers a turn from a pod, with no key in its spec, and deletes the pod when the run ends', async () => {
    fake.script(reply.text('hello from the pod'));
    const run = startRun(runner, group('kube-alpha'), 'hi');
    await run.handle.accepted;
    const outcome: RunOutcome = await run.handle.done;
    expect(outcome).toMatchObject({ ok: true });
    expect(run.replies).toEqual(['hello from the pod']);
    // The provider saw the host's key, not the run's: the run's key stayed between the agent and the gateway.
    expect(fake.requests.at(-1)?.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);

    const [pod] = api.accepted().filter((p) => p.metadata?.labels?.['carapace.run'] === String(run.runId));
    expect(pod).toBeDefined();
    const spec = JSON.stringify(pod);
    for (const key of issuedKeys) expect(spec).not.toContain(key);
    expect(spec).not.toContain(PROVIDER_KEY);
    expect(pod!.spec!.automountServiceAccountToken).toBe(false);
    // The earlier host's pod was removed before this run's pod was made.
    expect(api.pods().map((p) => p.metadata!.name)).not.toContain(`carapace-k${testRun}-999`);
    await runner.close();
    expect(api.pods()).toEqual([]);
    // The stale policy was replaced by one that allows exactly this gateway.
    expect(api.policies().map((p) => p.spec?.egress?.[0])).toEqual([
      {
        to: [{ ipBlock: { cidr: `${gatewayAddress.split(':')[0]}/32` } }],
        ports: [{ protocol: 'TCP', port: gateway.port }],
      },
    ]);
  }, 120_000);

  it('runs a command in the commands container under its own uid, on a copy of the group folder taken back after', async () => {
    const dir = path.join(groupsDir, 'kube-gamma');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'before\n');
    fs.writeFileSync(path.join(dir, 'gone.txt'), 'remove me\n');
    fs.writeFileSync(path.join(dir, 'kept.txt'), 'unchanged\n');
    const command =
      'id -u; cat notes.txt; echo after > notes.txt; rm gone.txt; mkdir -p sub && echo new > sub/new.txt; ' +
      'ln -s /etc/passwd link; ls -ld /workspace/session';
    fake.script(
      reply.toolCalls([{ id: 'call_k1', name: 'bash', arguments: { command } }]),
      reply.text('done'),
    );
    const run = startRun(runner, group('kube-gamma'), 'run it');
    expect(await run.handle.done).toEqual({ ok: true, reason: 'completed' });
    const last = fake.requests.at(-1)?.body as { messages: { role: string; content: string }[] };
    const result = last.messages.find((m) => m.role === 'tool')?.content ?? '';
    // Commands run as their own uid, saw the host's file, and have no agent's session folder at all.
    expect(result).toMatch(/^10002$/m);
    expect(result).toMatch(/^before$/m);
    expect(result).toMatch(/cannot access '\/workspace\/session': No such file or directory/);
    // Back on the host: the change, the new file and the removal; the link was not taken.
    expect(fs.readFileSync(path.join(dir, 'notes.txt'), 'utf8')).toBe('after\n');
    expect(fs.readFileSync(path.join(dir, 'sub', 'new.txt'), 'utf8')).toBe('new\n');
    expect(fs.readFileSync(path.join(dir, 'kept.txt'), 'utf8')).toBe('unchanged\n');
    expect(fs.existsSync(path.join(dir, 'gone.txt'))).toBe(false);
    expect(fs.existsSync(path.join(dir, 'link'))).toBe(false);
  }, 120_000);

  it('stops a run on request: the pod is deleted and the outcome says it was stopped', async () => {
    fake.script(reply.hang());
    const requestsBefore = fake.requests.length;
    const run = startRun(runner, group('kube-beta'), 'wait for it');
    await run.handle.accepted;
    await fake.waitForRequests(requestsBefore + 1);
    run.handle.stop('the owner said stop');
    const outcome = await run.handle.done;
    expect(outcome.ok).toBe(false);
    expect(outcome.reason).toContain('the owner said stop');
    await runner.close();
    expect(api.pods()).toEqual([]);
  }, 120_000);

  it('refuses a group with full network access before any pod is made', async () => {
    const before = api.accepted().length;
    const run = startRun(runner, { ...group('kube-full'), networkMode: 'full' }, 'hi');
    const outcome = await run.handle.done;
    expect(outcome).toMatchObject({ ok: false, retryable: false });
    expect(outcome.reason).toContain('full network access');
    expect(api.accepted()).toHaveLength(before);
  });

  it('refuses every run on a cluster that does not enforce NetworkPolicy, and says so', async () => {
    const careless = runnerOn(unenforcing);
    const run = startRun(careless, group('kube-open'), 'hi');
    const outcome = await run.handle.done;
    expect(outcome).toMatchObject({ ok: false, retryable: false });
    expect(outcome.reason).toContain(
      `NetworkPolicy is not enforced: a probe pod under the gateway-only policy reached ${outsideAddress}`,
    );
    // The probe ran and was deleted; no agent pod was ever made.
    expect(unenforcing.accepted().map((p) => p.spec!.containers[0]!.name)).toEqual(['probe']);
    expect(unenforcing.pods()).toEqual([]);
    // Refused for the host's life: a second run makes no second probe.
    expect((await startRun(careless, group('kube-open'), 'again').handle.done).ok).toBe(false);
    expect(unenforcing.accepted()).toHaveLength(1);
    await careless.close();
  }, 120_000);

  it('proves the policy on an enforcing cluster: its probe reached the gateway and not the outside', async () => {
    const probes = api.accepted().filter((p) => p.spec!.containers[0]!.name === 'probe');
    expect(probes).toHaveLength(1);
    expect(api.pods()).toEqual([]);
  });
});
