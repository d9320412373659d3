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
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import pino from 'pino';
import { CoreV1Api, NetworkingV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { KubernetesAgentRunner } from '../../../../host/containers/kubernetes/kubernetes-agent-runner.ts';
import { loadKubeConfig } from '../../../../host/containers/kubernetes/kube-config.ts';
import { agentPodSpec, gatewayNetworkPolicy } from '../../../../host/containers/kubernetes/pod-spec.ts';
import type { RunOutcome } from '../../../../host/router/agent-runner.ts';
import type { GroupRecord } from '../../../../host/store/groups-store.ts';
import { reply } from '../../../fakes/fake-provider.ts';
import { describeDocker } from '../../../helpers/docker-available.ts';
import { startKubeRig, type KubeRig } from '../../../helpers/kube-runner-rig.ts';
import { rigGroup as group, rigRun, startRigRun } from '../../../helpers/run-context.ts';
import { useTempDirs } from '../../../helpers/temp-dir.ts';

const docker = new Docker();
const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const testRun = randomUUID().slice(0, 8);
const PROVIDER_KEY = 'sk-kube-test-provider-key';
const tempDir = useTempDirs();

let rig: KubeRig;
let runner: KubernetesAgentRunner;
let nextRunId = 1;

function startRun(on: KubernetesAgentRunner, g: GroupRecord, text: string) {
  return startRigRun(on, rigRun(nextRunId++, g, text));
}

await describeDocker('the Kubernetes runner on the fake API server', () => {
  beforeAll(async () => {
    rig = await startKubeRig({
      docker,
      projectRoot,
      testRun,
      logger: pino({ level: process.env.KUBE_TEST_LOG ?? 'silent' }),
      providerKey: PROVIDER_KEY,
      handlers: {
        'security.bash_check': ({ command }) =>
          command.startsWith('id -u;')
            ? { decision: 'allow' as const, reason: 'test command' }
            : { decision: 'deny' as const, reason: 'no other commands in this test' },
      },
    });
    const { image } = rig;
    // A policy left by an earlier start with another gateway: the runner must put its own rules in place.
    const stale = loadKubeConfig({ kubeconfig: rig.enforcing.writeKubeconfig(tempDir()) });
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
    runner = rig.runnerOn(rig.enforcing);
  }, 5 * 60_000);

  afterAll(async () => {
    await rig?.close();
  }, 60_000);

  it('answers a turn from a pod, with no key in its spec, and deletes the pod when the run ends', async () => {
    rig.fake.script(reply.text('hello from the pod'));
    const run = startRun(runner, group('kube-alpha'), 'hi');
    await run.handle.accepted;
    const outcome: RunOutcome = await run.handle.done;
    expect(outcome).toMatchObject({ ok: true });
    expect(run.replies).toEqual(['hello from the pod']);
    // The provider saw the host's key, not the run's: the run's key stayed between the agent and the gateway.
    expect(rig.fake.requests.at(-1)?.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);

    const [pod] = rig.enforcing
      .accepted()
      .filter((p) => p.metadata?.labels?.['carapace.run'] === String(run.runId));
    expect(pod).toBeDefined();
    const spec = JSON.stringify(pod);
    for (const key of rig.issuedKeys) expect(spec).not.toContain(key);
    expect(spec).not.toContain(PROVIDER_KEY);
    expect(pod!.spec!.automountServiceAccountToken).toBe(false);
    // The earlier host's pod was removed before this run's pod was made.
    expect(rig.enforcing.pods().map((p) => p.metadata!.name)).not.toContain(`carapace-k${testRun}-999`);
    await runner.close();
    expect(rig.enforcing.pods()).toEqual([]);
    // The stale policy was replaced by one that allows exactly this gateway.
    expect(rig.enforcing.policies().map((p) => p.spec?.egress?.[0])).toEqual([
      {
        to: [{ ipBlock: { cidr: `${rig.gatewayAddress.split(':')[0]}/32` } }],
        ports: [{ protocol: 'TCP', port: rig.gateway.port }],
      },
    ]);
  }, 120_000);

  it('runs a command in the commands container under its own uid, on a copy of the group folder taken back after', async () => {
    const dir = path.join(rig.groupsDir, 'kube-gamma');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'before\n');
    fs.writeFileSync(path.join(dir, 'gone.txt'), 'remove me\n');
    fs.writeFileSync(path.join(dir, 'kept.txt'), 'unchanged\n');
    const command =
      'id -u; cat notes.txt; echo after > notes.txt; rm gone.txt; mkdir -p sub && echo new > sub/new.txt; ' +
      'ln -s /etc/passwd link; ls -ld /workspace/session';
    rig.fake.script(
      reply.toolCalls([{ id: 'call_k1', name: 'bash', arguments: { command } }]),
      reply.text('done'),
    );
    const run = startRun(runner, group('kube-gamma'), 'run it');
    const outcome = await run.handle.done;
    expect(outcome.reason).toBe('completed');
    expect(outcome.ok).toBe(true);
    const last = rig.fake.requests.at(-1)?.body as { messages: { role: string; content: string }[] };
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

  it("carries the conversation from one turn to the next: the second turn's pod holds the first's history", async () => {
    const word = `marmalade-${testRun}`;
    rig.fake.script(reply.text(`noted: ${word}`));
    const first = startRun(runner, group('kube-delta'), `remember ${word}`);
    expect(await first.handle.done).toMatchObject({ ok: true });
    // Back on the host, the agent's alone (0700), as the Docker runner's session mount leaves it.
    const sessionDir = path.join(rig.sessionsDir, 'kube-delta');
    expect(fs.readFileSync(path.join(sessionDir, 'history.jsonl'), 'utf8')).toContain(word);
    expect(fs.statSync(sessionDir).mode & 0o077).toBe(0);

    rig.fake.script(reply.text('I remember'));
    const second = startRun(runner, group('kube-delta'), 'what was the word?');
    expect(await second.handle.done).toMatchObject({ ok: true });
    const sent = JSON.stringify(rig.fake.requests.at(-1)?.body);
    expect(sent).toContain(`remember ${word}`);
    expect(sent).toContain(`noted: ${word}`);
    // Another group's turn starts with nothing of it.
    rig.fake.script(reply.text('hello'));
    expect(await startRun(runner, group('kube-epsilon'), 'hi').handle.done).toMatchObject({ ok: true });
    expect(JSON.stringify(rig.fake.requests.at(-1)?.body)).not.toContain(word);
  }, 180_000);

  it('stops a run on request: the pod is deleted and the outcome says it was stopped', async () => {
    rig.fake.script(reply.hang());
    const requestsBefore = rig.fake.requests.length;
    const run = startRun(runner, group('kube-beta'), 'wait for it');
    await run.handle.accepted;
    await rig.fake.waitForRequests(requestsBefore + 1);
    run.handle.stop('the owner said stop');
    const outcome = await run.handle.done;
    expect(outcome.ok).toBe(false);
    expect(outcome.reason).toContain('the owner said stop');
    await runner.close();
    expect(rig.enforcing.pods()).toEqual([]);
  }, 120_000);

  it('refuses a group with full network access before any pod is made', async () => {
    const before = rig.enforcing.accepted().length;
    const run = startRun(runner, { ...group('kube-full'), networkMode: 'full' }, 'hi');
    const outcome = await run.handle.done;
    expect(outcome).toMatchObject({ ok: false, retryable: false });
    expect(outcome.reason).toContain('full network access');
    // It says what to do about it.
    expect(outcome.reason).toContain('carapace groups add kube-full … --network gateway');
    expect(rig.enforcing.accepted()).toHaveLength(before);
  });

  it('refuses every run on a cluster that does not enforce NetworkPolicy, and says so', async () => {
    const careless = rig.runnerOn(rig.unenforcing);
    const run = startRun(careless, group('kube-open'), 'hi');
    const outcome = await run.handle.done;
    expect(outcome).toMatchObject({ ok: false, retryable: false });
    expect(outcome.reason).toContain(
      `NetworkPolicy is not enforced: a probe pod under the gateway-only policy reached ${rig.outsideAddress}`,
    );
    // The probe ran and was deleted; no agent pod was ever made.
    expect(rig.unenforcing.accepted().map((p) => p.spec!.containers[0]!.name)).toEqual(['probe']);
    expect(rig.unenforcing.pods()).toEqual([]);
    // Refused for the host's life: a second run makes no second probe.
    expect((await startRun(careless, group('kube-open'), 'again').handle.done).ok).toBe(false);
    expect(rig.unenforcing.accepted()).toHaveLength(1);
    await careless.close();
  }, 120_000);

  it('proves the policy on an enforcing cluster: its probe reached the gateway and not the outside', async () => {
    const probes = rig.enforcing.accepted().filter((p) => p.spec!.containers[0]!.name === 'probe');
    expect(probes).toHaveLength(1);
    expect(rig.enforcing.pods()).toEqual([]);
  });
});
