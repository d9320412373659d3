/**
 * Pre-started containers with the real runner: real Docker, the real agent image, the real gateway in front
 * of a fake provider. A group's next container is created and booted ahead of its run; a run takes it with
 * run.start, which brings the run's gateway key.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { removeOrphans } from '../../../host/containers/run/container-orphans.ts';
import { containersConfigSchema } from '../../../host/containers/run/container-config.ts';
import { LABEL_GROUP } from '../../../host/containers/run/container-spec.ts';
import {
  createDockerAgentRunner,
  type DockerAgentRunner,
} from '../../../host/containers/run/docker-agent-runner.ts';
import type { GroupMountPlan } from '../../../host/containers/mounts/group-mounts.ts';
import { defaultBridgeAddress } from '../../../host/containers/network/network-gateway.ts';
import { gatewayConfigSchema, providerConfigSchema } from '../../../host/gateway/config.ts';
import { createGateway, type Gateway } from '../../../host/gateway/gateway.ts';
import type { RunOutcome } from '../../../host/router/agent-runner.ts';
import type { GroupRecord } from '../../../host/store/groups-store.ts';
import { createMemoryUsageStore } from '../../fakes/memory-usage-store.ts';
import { reply, startFakeProvider, type FakeProvider } from '../../fakes/fake-provider.ts';
import { agentImageTag } from '../../helpers/agent-image.ts';
import { describeDocker } from '../../helpers/docker-available.ts';
import { replyOnlyHandlers } from '../../helpers/reply-only-handlers.ts';
import { rigGroup, rigRun, startRigRun } from '../../helpers/run-context.ts';
import { eventually } from '../../e2e/e2e-harness.ts';
import { systemClock } from '../../../host/time/clock.ts';

const docker = new Docker();
const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const testRun = randomUUID().slice(0, 8);
const PROVIDER_KEY = 'sk-prestart-test-provider-key';
const testLabels = { 'carapace.test': testRun };

let fake: FakeProvider;
let gateway: Gateway;
let image = '';
let tmp = '';
let nextRunId = 1;
/** Keys the gateway issued, in order. */
const issued: { key: string; runId: string }[] = [];
/** Extra mounts per group, changed by tests to show that a changed plan replaces the container. */
const extraMounts = new Map<string, string>();
/** Groups a test removed: the runner no longer finds them. */
const removedGroups = new Set<string>();
const runners: DockerAgentRunner[] = [];
/** The runners' log messages, for what only the log says (which run took a pre-started container). */
const logged: string[] = [];
const tookPrestarted = () => logged.filter((m) => m === 'run took a pre-started container').length;

const group = (id: string) => rigGroup(id, { networkMode: 'full' });

function planFor(g: GroupRecord): GroupMountPlan {
  const groupDir = path.join(tmp, 'groups', g.id);
  const sessionDir = path.join(tmp, 'sessions', g.id);
  fs.mkdirSync(groupDir, { recursive: true });
  fs.mkdirSync(sessionDir, { recursive: true });
  const mounts: GroupMountPlan['mounts'] = [
    { kind: 'group', hostPath: groupDir, containerPath: '/workspace/group', readOnly: false },
    { kind: 'session', hostPath: sessionDir, containerPath: '/workspace/session', readOnly: false },
  ];
  const extra = extraMounts.get(g.id);
  if (extra)
    mounts.push({ kind: 'extra', hostPath: extra, containerPath: '/workspace/extra/x', readOnly: true });
  return {
    groupId: g.id,
    isAdmin: false,
    mounts,
    rejected: [],
    notes: [],
    secretMounts: [],
    sharedMounts: [],
  };
}

async function startRunner(budget: { count: number; memoryMb?: number }): Promise<DockerAgentRunner> {
  const bridge = await defaultBridgeAddress(docker);
  const runner = createDockerAgentRunner({
    docker,
    image,
    hostInstanceId: `prestart-${testRun}`,
    labels: testLabels,
    nameScope: testRun,
    containers: containersConfigSchema.parse({ memory_mb: 256, stop_grace_ms: 500 }),
    prestart: { count: budget.count, memoryMb: budget.memoryMb ?? 1024, idleMs: 120_000 },
    networks: { full: { hostAddress: bridge }, gateway: { unavailable: 'not in this test' } },
    gateway: {
      issueKey: (owner) => {
        const key = gateway.issueKey(owner);
        issued.push({ key: key.key, runId: owner.runId });
        return key;
      },
      baseUrlFor: (address) => gateway.baseUrlFor(address),
      credentialsUrlFor: (address) => gateway.credentialsUrlFor(address),
    },
    planMounts: planFor,
    groupById: (id) => (removedGroups.has(id) ? undefined : group(id)),
    startParams: () => ({
      assistantName: 'Andy',
      timezone: 'UTC',
      formatting: 'Plain text.',
      limits: { maxToolSteps: 3, maxOutputTokens: 256, wallTimeMs: 60_000 },
      model: 'fake-model',
    }),
    env: () => ({ TZ: 'UTC' }),
    handlersFor: (_identity, callbacks, onDone) => replyOnlyHandlers(callbacks, onDone),
    onProtocolProblem: () => undefined,
    onRunEnded: () => undefined,
    hostIds: { uid: process.getuid?.() ?? 1000, gid: process.getgid?.() ?? 1000 },
    logger: pino(
      { level: 'debug' },
      { write: (line: string) => void logged.push((JSON.parse(line) as { msg: string }).msg) },
    ),
  });
  runners.push(runner);
  return runner;
}

/** One run of `g` through the runner: its replies and how it ended. */
async function runOnce(runner: DockerAgentRunner, g: GroupRecord, text: string) {
  const run = startRigRun(runner, rigRun(nextRunId++, g, text));
  const outcome: RunOutcome = await run.handle.done;
  return { runId: run.runId, replies: run.replies, outcome };
}

/** Containers of this test (all states), optionally of one group. */
async function containersOf(groupId?: string) {
  return docker.listContainers({
    all: true,
    filters: {
      label: [`carapace.test=${testRun}`, ...(groupId ? [`${LABEL_GROUP}=${groupId}`] : [])],
    },
  });
}

function gatewayStatus(key: string): Promise<number> {
  return fetch(`${gateway.baseUrlFor('127.0.0.1')}/models`, {
    headers: { authorization: `Bearer ${key}` },
  }).then(async (res) => {
    await res.arrayBuffer();
    return res.status;
  });
}

await describeDocker('pre-started containers', () => {
  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-prestart-'));
    image = await agentImageTag(docker, projectRoot);
    fake = await startFakeProvider({ apiKey: PROVIDER_KEY });
    gateway = createGateway({
      config: () => gatewayConfigSchema.parse({}),
      provider: providerConfigSchema.parse({ base_url: fake.openaiBaseUrl, model: 'fake-model' }),
      providerApiKey: PROVIDER_KEY,
      usageStore: createMemoryUsageStore(),
      clock: systemClock,
      timezone: () => 'UTC',
      maxOutputTokens: 256,
      logger: {
        debug: () => undefined,
        info: () => undefined,
        warn: () => undefined,
        error: () => undefined,
      },
    });
    await gateway.listen(['127.0.0.1', await defaultBridgeAddress(docker)]);
  }, 5 * 60_000);

  afterAll(async () => {
    for (const r of runners) await r.close().catch(() => undefined);
    await removeOrphans(docker, { exceptHostInstanceId: 'none', onlyWithLabels: testLabels });
    await gateway?.close();
    await fake?.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  }, 60_000);

  it('serves one run each, holds no key until its run starts, and the key dies when the run ends', async () => {
    const runner = await startRunner({ count: 2 });
    const g = group('alpha');
    const keysBefore = issued.length;
    const requestsBefore = fake.requests.length;
    runner.warm(g);
    const [first] = await eventually('a pre-started container for alpha', () =>
      runner.prestarted().length === 1 ? runner.prestarted() : undefined,
    );
    const firstInfo = await docker.getContainer((await containersOf('alpha'))[0]?.Id ?? '').inspect();
    expect(`/${first?.name}`).toBe(firstInfo.Name);
    expect(firstInfo.State.Running).toBe(true);
    expect(firstInfo.Config.Env.some((e) => e.startsWith('OPENAI_API_KEY='))).toBe(false);
    // A pre-started container waits: no key was issued for it, and nothing reached the provider.
    expect(issued.length).toBe(keysBefore);
    expect(fake.requests.length).toBe(requestsBefore);

    // During the run: the only container of alpha is the pre-started one, and the run's key works.
    let during: { names: string[]; keyStatus: number } | undefined;
    fake.setResponder(async () => {
      const key = issued.at(-1)?.key ?? '';
      during = {
        names: (await containersOf('alpha')).map((c) => c.Names[0] ?? ''),
        keyStatus: await gatewayStatus(key),
      };
      return reply.text('first answer');
    });
    const tookBefore = tookPrestarted();
    const run1 = await runOnce(runner, g, 'hello');
    expect(tookPrestarted()).toBe(tookBefore + 1);
    expect(run1.outcome).toEqual({ ok: true, reason: 'completed' });
    expect(run1.replies).toEqual(['first answer']);
    expect(during?.names).toEqual([`/${first?.name}`]);
    expect(during?.keyStatus).toBe(200);
    const key1 = issued.at(-1);
    expect(key1?.runId).toBe(String(run1.runId));
    expect(issued.length).toBe(keysBefore + 1);
    // The run is over when done resolves: its key is already dead.
    expect(await gatewayStatus(key1?.key ?? '')).toBe(401);

    // The group was active: its next container is pre-started, a new one.
    const [second] = await eventually('the next pre-started container for alpha', () => {
      const now = runner.prestarted();
      return now.length === 1 && now[0]?.name !== first?.name ? now : undefined;
    });
    // The first one is gone for good: it served its run and no other.
    await eventually('the used container to be removed', async () =>
      (await containersOf('alpha')).every((c) => c.Names[0] !== `/${first?.name}`),
    );
    fake.setResponder(async () => {
      during = { names: (await containersOf('alpha')).map((c) => c.Names[0] ?? ''), keyStatus: 0 };
      return reply.text('second answer');
    });
    const run2 = await runOnce(runner, g, 'again');
    expect(run2.replies).toEqual(['second answer']);
    expect(during?.names).toContain(`/${second?.name}`);
    expect(during?.names).not.toContain(`/${first?.name}`);
    expect(await gatewayStatus(issued.at(-1)?.key ?? '')).toBe(401);
    fake.setResponder(undefined);
    await runner.close();
  }, 120_000);

  it('replaces a pre-started container whose mounts changed, and a host stop leaves none behind', async () => {
    const runner = await startRunner({ count: 3 });
    const g = group('beta');
    runner.warm(g);
    runner.warm(group('gamma'));
    runner.warm(group('delta'));
    await eventually('three pre-started containers', () => runner.prestarted().length === 3);
    const stale = runner.prestarted().find((p) => p.groupId === 'beta');

    // The owner adds a mount for beta: the waiting container does not have it, so the run gets a new one.
    const extra = fs.mkdtempSync(path.join(tmp, 'extra-'));
    fs.writeFileSync(path.join(extra, 'note.txt'), 'mounted');
    extraMounts.set('beta', extra);
    let names: string[] = [];
    let mountedExtra = false;
    fake.setResponder(async () => {
      const running = (await containersOf('beta')).filter((c) => c.State === 'running');
      names = running.map((c) => c.Names[0] ?? '');
      const info = await docker.getContainer(running[0]?.Id ?? '').inspect();
      mountedExtra = info.Mounts.some((m) => m.Destination === '/workspace/extra/x');
      return reply.text('with the new mount');
    });
    const run = await runOnce(runner, g, 'look');
    expect(run.replies).toEqual(['with the new mount']);
    expect(names).toHaveLength(1);
    expect(names).not.toContain(`/${stale?.name}`);
    expect(mountedExtra).toBe(true);
    fake.setResponder(undefined);

    await eventually('beta pre-started again, with the mount', () =>
      runner.prestarted().some((p) => p.groupId === 'beta' && p.name !== stale?.name),
    );
    expect((await containersOf()).length).toBeGreaterThanOrEqual(3);
    await runner.close();
    expect(runner.prestarted()).toEqual([]);
    expect(await containersOf()).toEqual([]);
    // Closed: nothing is pre-started any more. A second close waits for any pre-start the warm queued.
    const loggedBefore = logged.length;
    runner.warm(group('epsilon'));
    await runner.close();
    expect(logged.slice(loggedBefore)).not.toContain('container pre-started');
    expect(runner.prestarted()).toEqual([]);
    expect(await containersOf()).toEqual([]);
  }, 120_000);

  it('a removed group loses its pre-started container at once; a changed group gets a new one without a run', async () => {
    // idle_ms is two minutes here: anything gone within the test's wait was stopped by the refresh.
    const runner = await startRunner({ count: 3 });
    runner.warm(group('zeta'));
    runner.warm(group('eta'));
    runner.warm(group('theta'));
    await eventually('three pre-started containers', () => runner.prestarted().length === 3);
    const before = new Map(runner.prestarted().map((p) => [p.groupId, p.name]));

    removedGroups.add('zeta');
    const extra = fs.mkdtempSync(path.join(tmp, 'extra-'));
    extraMounts.set('eta', extra);
    runner.refresh();

    expect(runner.prestarted().map((p) => p.groupId)).toEqual(['theta']);
    await eventually('zeta has no container left', async () => (await containersOf('zeta')).length === 0);
    const [eta] = await eventually('eta pre-started again, with the mount', async () => {
      const running = (await containersOf('eta')).filter((c) => c.State === 'running');
      return running.length === 1 && running[0]?.Names[0] !== `/${before.get('eta')}` ? running : undefined;
    });
    const info = await docker.getContainer(eta?.Id ?? '').inspect();
    expect(info.Mounts.some((m) => m.Destination === '/workspace/extra/x')).toBe(true);
    // The unchanged group keeps the container it had.
    expect(runner.prestarted().find((p) => p.groupId === 'theta')?.name).toBe(before.get('theta'));
    // A removed group is not pre-started again by a refresh. Pre-starts run one at a time in the order
    // asked: once a group warmed after the refresh is up, whatever the refresh asked for is done too.
    runner.refresh();
    runner.warm(group('iota'));
    await eventually('iota pre-started after the refresh', () =>
      runner.prestarted().some((p) => p.groupId === 'iota'),
    );
    expect(runner.prestarted().map((p) => p.groupId)).not.toContain('zeta');
    expect(await containersOf('zeta')).toEqual([]);
    await runner.close();
    expect(await containersOf()).toEqual([]);
  }, 120_000);

  it('a burst of 20 groups with a budget of 3: three runs take pre-started containers, all 20 answer', async () => {
    const runner = await startRunner({ count: 3 });
    const groups = Array.from({ length: 20 }, (_, i) => group(`burst-${i}`));
    for (const g of groups) runner.warm(g);
    await eventually('three pre-started containers', () => runner.prestarted().length === 3);
    // The other 17 were refused when asked (warm() decides at once). One wrongly queued behind the three
    // would be up before its group's run below, which would take it: the count of takes is the check.
    expect(runner.prestarted()).toHaveLength(3);
    const warmed = new Set(runner.prestarted().map((p) => p.groupId));
    const tookBefore = tookPrestarted();

    // Three at a time, like the queue's default max_concurrent.
    const outcomes: { groupId: string; replies: string[]; ok: boolean }[] = [];
    for (let i = 0; i < groups.length; i += 3) {
      const batch = groups.slice(i, i + 3);
      const done = await Promise.all(batch.map((g) => runOnce(runner, g, `hi from ${g.id}`)));
      done.forEach((d, j) =>
        outcomes.push({ groupId: batch[j]?.id ?? '', replies: d.replies, ok: d.outcome.ok }),
      );
    }
    expect(outcomes.filter((o) => o.ok)).toHaveLength(20);
    for (const o of outcomes) expect(o.replies).toHaveLength(1);
    expect(warmed.size).toBe(3);
    // Those three groups' runs took their containers; the other 17 started theirs as without pre-starting.
    expect(tookPrestarted() - tookBefore).toBe(3);
    // The budget still holds after the burst.
    expect(runner.prestarted().length).toBeLessThanOrEqual(3);
    await runner.close();
    expect(await containersOf()).toEqual([]);
  }, 240_000);
});
