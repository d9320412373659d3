/**
 * Warm pods and leftovers of the Kubernetes runner on the fake API server (its pods real Docker containers
 * of the agent image): a warm pod serves one run and is replaced after it, a config change discards it, no
 * warm pod's spec holds a key, and what a host process left (its runner gone mid-run) is deleted by the next
 * start, or by `carapace cleanup` when no host runs.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import pino from 'pino';
import { CoreV1Api, NetworkingV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { KubernetesAgentRunner } from '../../../../host/containers/kubernetes/kubernetes-agent-runner.ts';
import { dataFolderLabel } from '../../../../host/containers/run/data-folder-label.ts';
import { acquireHostLock } from '../../../../host/store/host-lock.ts';
import { loadKubeConfig } from '../../../../host/containers/kubernetes/kube-config.ts';
import { agentPodSpec, gatewayNetworkPolicy } from '../../../../host/containers/kubernetes/pod-spec.ts';
import { reply } from '../../../fakes/fake-provider.ts';
import { describeDocker } from '../../../helpers/docker-available.ts';
import { startKubeRig, type KubeRig } from '../../../helpers/kube-runner-rig.ts';
import { runCli, startProcess, waitFor } from '../../../helpers/processes.ts';
import { rigGroup as group, rigRun, startRigRun } from '../../../helpers/run-context.ts';
import { useTempDirs } from '../../../helpers/temp-dir.ts';

const docker = new Docker();
const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const testRun = randomUUID().slice(0, 8);
const PROVIDER_KEY = 'sk-kube-warm-provider-key';
const tempDir = useTempDirs();
const BUDGET = { count: 2, memoryMb: 256, idleMs: 120_000 };

let rig: KubeRig;
let nextRunId = 1;

/** Resolves with what `pick` finds once it finds it (the pool warms in the background). */
const until = <T>(pick: () => T | undefined, what: string) => waitFor(what, pick, 60_000);

const warmPodOf = (runner: KubernetesAgentRunner, groupId: string) =>
  runner.prestartStatus().containers.find((c) => c.groupId === groupId)?.name;

const livePod = (name: string): V1Pod | undefined =>
  rig.enforcing.pods().find((p) => p.metadata?.name === name);

/** No issued key, and not the provider's, anywhere in a pod as the cluster holds it. */
function expectKeyless(pod: V1Pod | undefined) {
  expect(pod).toBeDefined();
  const text = JSON.stringify(pod);
  for (const key of rig.issuedKeys) expect(text).not.toContain(key);
  expect(text).not.toContain(PROVIDER_KEY);
}

await describeDocker('warm pods and leftovers of the Kubernetes runner', () => {
  beforeAll(async () => {
    rig = await startKubeRig({
      docker,
      projectRoot,
      testRun,
      logger: pino({ level: process.env.KUBE_TEST_LOG ?? 'silent' }),
      providerKey: PROVIDER_KEY,
    });
  }, 5 * 60_000);

  afterAll(async () => {
    await rig?.close();
  }, 60_000);

  it('runs a turn on a warm pod, then warms a new one; neither pod holds a key', async () => {
    const runner = rig.runnerOn(rig.enforcing, { prestart: BUDGET });
    const g = group('warm-alpha');
    runner.warm(g);
    const warm = await until(() => warmPodOf(runner, g.id), 'a warm pod');
    expect(warm).toMatch(/-pre-[0-9a-f]{8}$/);
    expectKeyless(livePod(warm));
    // It waits for its run: the deadline counts the wait, not only the run.
    expect(livePod(warm)!.spec!.activeDeadlineSeconds).toBeGreaterThan(Math.ceil(BUDGET.idleMs / 1000));

    rig.fake.script(reply.text('hello from a warm pod'));
    const creates = () =>
      rig.enforcing.requests.filter((r) => r === 'POST /api/v1/namespaces/carapace/pods').length;
    const before = creates();
    const run = startRigRun(runner, rigRun(nextRunId++, g, 'hi'));
    await run.handle.accepted;
    // No pod was made for the run: it took the warm one, which left the pool.
    expect(creates()).toBe(before);
    expect(warmPodOf(runner, g.id)).toBeUndefined();
    expect(await run.handle.done).toMatchObject({ ok: true });
    expect(run.replies).toEqual(['hello from a warm pod']);
    // The run's key was issued after the pod was made, and reached it over the attach stream only.
    expect(rig.issuedKeys.length).toBeGreaterThan(0);
    expectKeyless(rig.enforcing.accepted().find((p) => p.metadata?.name === warm));
    // Used once: deleted with its run, and a new pod is warmed for the group's next run.
    expect(livePod(warm)).toBeUndefined();
    const next = await until(() => warmPodOf(runner, g.id), 'the next warm pod');
    expect(next).not.toBe(warm);
    expectKeyless(livePod(next));

    await runner.close();
    expect(rig.enforcing.pods()).toEqual([]);
  }, 180_000);

  it('discards a warm pod when the config changes: at refresh, and at a run that finds it stale', async () => {
    let tz = 'UTC';
    const runner = rig.runnerOn(rig.enforcing, {
      prestart: BUDGET,
      env: () => ({ TZ: tz }),
    });
    const g = group('warm-beta');
    runner.warm(g);
    const first = await until(() => warmPodOf(runner, g.id), 'a warm pod');

    tz = 'Europe/Berlin';
    runner.refresh();
    await until(() => (livePod(first) ? undefined : true), 'the stale warm pod deleted');
    const second = await until(() => warmPodOf(runner, g.id), 'a warm pod made from the new config');
    expect(second).not.toBe(first);
    expect(livePod(second)!.spec!.containers[0]!.env).toContainEqual({ name: 'TZ', value: 'Europe/Berlin' });

    // Changed again, without a refresh: the run must not take the pod made from the old config.
    tz = 'Asia/Tokyo';
    rig.fake.script(reply.text('made fresh'));
    const run = startRigRun(runner, rigRun(nextRunId++, g, 'hi'));
    expect(await run.handle.done).toMatchObject({ ok: true });
    expect(run.replies).toEqual(['made fresh']);
    const used = rig.enforcing
      .accepted()
      .find((p) => p.metadata?.labels?.['carapace.run'] === String(run.runId));
    expect(used?.spec!.containers[0]!.env).toContainEqual({ name: 'TZ', value: 'Asia/Tokyo' });
    expect(livePod(second)).toBeUndefined();
    await runner.close();
    expect(rig.enforcing.pods()).toEqual([]);
  }, 180_000);

  it("deletes a gone host process's run and warm pods at the next start, and keeps its own", async () => {
    // The first process's runner is dropped mid-run, never closed: what a SIGKILL leaves in the cluster.
    const gone = rig.runnerOn(rig.enforcing, { prestart: BUDGET, hostInstanceId: `gone-${testRun}` });
    const g = group('warm-gamma');
    gone.warm(group('warm-delta'));
    const warm = await until(() => warmPodOf(gone, 'warm-delta'), 'a warm pod');
    rig.fake.script(reply.hang());
    const run = startRigRun(gone, rigRun(nextRunId++, g, 'hi'));
    await run.handle.accepted;
    const inFlight = rig.enforcing
      .pods()
      .find((p) => p.metadata?.labels?.['carapace.run'] === String(run.runId))!.metadata!.name!;

    const next = rig.runnerOn(rig.enforcing, { prestart: BUDGET, hostInstanceId: `next-${testRun}` });
    next.warm(group('warm-epsilon'));
    const own = await until(() => warmPodOf(next, 'warm-epsilon'), "the new process's warm pod");
    // Its start removed both of the gone process's pods and kept its own.
    expect(livePod(warm)).toBeUndefined();
    expect(livePod(inFlight)).toBeUndefined();
    expect(livePod(own)).toBeDefined();
    // The gone process's run ends (its pod was deleted under it).
    expect(await run.handle.done).toMatchObject({ ok: false });
    await next.close();
    await gone.close();
    expect(rig.enforcing.pods()).toEqual([]);
  }, 180_000);

  it('a host process SIGKILLed with a warm pod leaves it in the cluster; the next start deletes it', async () => {
    const { child, log } = await startProcess('test/fakes/kube-warm-host.ts', {
      KUBECONFIG_FILE: rig.enforcing.writeKubeconfig(tempDir()),
      KUBE_IMAGE: rig.image,
      KUBE_GATEWAY: rig.gatewayAddress,
      KUBE_FORBIDDEN: rig.outsideAddress,
      KUBE_DATA_FOLDER: `k${testRun}`,
      KUBE_HOST_ID: `killed-${testRun}`,
      KUBE_GROUPS_DIR: rig.groupsDir,
    });
    const warm = /^warm (\S+)$/m.exec(log())?.[1];
    expect(warm).toBeDefined();
    const exited = new Promise<NodeJS.Signals | null>((r) => child.on('exit', (_c, signal) => r(signal)));
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    // Killed, the process deleted nothing: its pod stays until a host of the data folder starts.
    expect(livePod(warm!)).toBeDefined();
    const next = rig.runnerOn(rig.enforcing, { hostInstanceId: `after-kill-${testRun}` });
    await next.prepare();
    expect(livePod(warm!)).toBeUndefined();
    await next.close();
    expect(rig.enforcing.pods()).toEqual([]);
  }, 180_000);

  it("carapace cleanup deletes an idle data folder's pods and policy in the configured namespace, and a running host's nothing", async () => {
    const root = tempDir();
    const dataDir = path.join(root, 'data');
    const configDir = path.join(root, 'cfg');
    fs.mkdirSync(dataDir, { recursive: true });
    fs.mkdirSync(configDir, { recursive: true });
    const kubeconfig = rig.enforcing.writeKubeconfig(root);
    fs.writeFileSync(
      path.join(configDir, 'config.toml'),
      [
        '[runner]',
        'kind = "kubernetes"',
        '[runner.kubernetes]',
        `kubeconfig = ${JSON.stringify(kubeconfig)}`,
        `image = ${JSON.stringify(rig.image)}`,
        `gateway_address = "${rig.gatewayAddress}"`,
      ].join('\n'),
    );
    const dataFolderId = dataFolderLabel(dataDir);
    // Another data folder's pod (`other`) is not this folder's to clean.
    const other = `other-${testRun}`;
    const leftPod = (folder: string, runId: number) =>
      agentPodSpec({
        namespace: 'carapace',
        dataFolderId: folder,
        hostInstanceId: 'killed-host',
        runId,
        groupId: 'left',
        image: rig.image,
        resources: { cpu: 1, memoryMb: 256, scratchMb: 32 },
        quotas: { groupMb: 64, sessionMb: 16 },
        hardTimeoutMs: 60_000,
        env: { TZ: 'UTC' },
      });
    const kc = loadKubeConfig({ kubeconfig });
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedPod({ namespace: 'carapace', body: leftPod(dataFolderId, 41) });
    await core.createNamespacedPod({ namespace: 'carapace', body: leftPod(other, 42) });
    await kc.makeApiClient(NetworkingV1Api).createNamespacedNetworkPolicy({
      namespace: 'carapace',
      body: gatewayNetworkPolicy({ namespace: 'carapace', dataFolderId, gatewayAddress: rig.gatewayAddress }),
    });
    const env = { CARAPACE_DATA_DIR: dataDir, CARAPACE_CONFIG_DIR: configDir };
    const mine = leftPod(dataFolderId, 41).metadata!.name!;
    const theirs = leftPod(other, 42).metadata!.name!;
    const policy = gatewayNetworkPolicy({
      namespace: 'carapace',
      dataFolderId,
      gatewayAddress: rig.gatewayAddress,
    }).metadata!.name!;

    // A host runs on the folder: its pods and policy are live, and cleanup leaves the cluster alone.
    const lock = acquireHostLock(dataDir);
    try {
      const busy = await runCli(['cleanup'], env);
      expect(busy.code).toBe(0);
      expect(busy.stdout).toMatch(/^a host runs on this data folder/);
    } finally {
      lock.release();
    }
    expect(livePod(mine)).toBeDefined();

    const dry = await runCli(['cleanup', '--dry-run'], env);
    expect(dry.stderr).toBe('');
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`would remove pod ${mine} (namespace carapace)`);
    expect(dry.stdout).toContain(`would remove networkpolicy ${policy} (namespace carapace)`);
    expect(dry.stdout).not.toContain(theirs);
    expect(livePod(mine)).toBeDefined();

    const done = await runCli(['cleanup'], env);
    expect(done.code).toBe(0);
    expect(done.stdout).toContain(`removed pod ${mine}`);
    expect(livePod(mine)).toBeUndefined();
    expect(rig.enforcing.policies().map((p) => p.metadata!.name)).not.toContain(policy);
    expect(livePod(theirs)).toBeDefined();
    expect((await runCli(['cleanup'], env)).stdout).toContain('nothing to clean up in namespace carapace');

    await core.deleteNamespacedPod({ namespace: 'carapace', name: theirs, gracePeriodSeconds: 0 });
  }, 180_000);
});
