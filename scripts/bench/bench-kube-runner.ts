/**
 * The Kubernetes runner's cost against the Docker runner's, in one run on one machine: the same turn (one
 * LLM call answered at once by the fake provider, one reply) through the Docker runner (a cold container,
 * no pre-start, on the isolated gateway network) and through the Kubernetes runner on the fake API server
 * (a pod of two Docker containers on the same network, the group folder copied in and back, the attach and
 * exec streams over WebSocket), interleaved, with a bare `docker run --rm --entrypoint true` of the same
 * image as the baseline. Also the API requests each run makes (create, watch, attach, exec ×2, delete).
 * Warm rows: the same turn on a pod (or a container) pre-started after the group's previous turn, as
 * `[runs.prestart]` does for an active group; the turn is timed once the warm one is ready.
 *
 * What the fake cannot show: a real cluster's scheduling and image pull, and the kubelet's own start time;
 * the figures are the runner's overhead over the container engine it drives.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import Docker from 'dockerode';
import pino from 'pino';
import { PROJECT_ROOT } from '../../host/cli/cli-context.ts';
import { containersConfigSchema } from '../../host/containers/run/container-config.ts';
import { createDockerAgentRunner } from '../../host/containers/run/docker-agent-runner.ts';
import { removeOrphans } from '../../host/containers/run/container-orphans.ts';
import type { AgentRunner } from '../../host/router/agent-runner.ts';
import { reply } from '../../test/fakes/fake-provider.ts';
import { startKubeRig } from '../../test/helpers/kube-runner-rig.ts';
import { rigGroup, rigRun, startRigRun } from '../../test/helpers/run-context.ts';
import { isMain, median, printFigures } from './stats.ts';

const TURNS = 9;

function bareDockerRun(image: string): Promise<number> {
  const start = performance.now();
  return new Promise((resolve, reject) =>
    execFile(
      'docker',
      ['run', '--rm', '--entrypoint', 'true', image],
      { timeout: 60_000 },
      (error, _o, stderr) =>
        error
          ? reject(new Error(`docker run: ${stderr || error.message}`))
          : resolve(performance.now() - start),
    ),
  );
}

export async function benchKubeRunner(): Promise<Record<string, number | string>> {
  const docker = new Docker();
  await docker.ping();
  const testRun = randomUUID().slice(0, 8);
  const logger = pino({ level: 'silent' });
  const rig = await startKubeRig({
    docker,
    projectRoot: PROJECT_ROOT,
    testRun,
    logger,
    providerKey: 'sk-bench-kube-provider-key',
  });
  const labels = { 'carapace.test': testRun };
  const sessions = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-sessions-'));
  const folder = (root: string, id: string) => {
    const dir = path.join(root, id);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  };
  try {
    rig.fake.setResponder(() => reply.text('Noted.'));
    const kube = rig.runnerOn(rig.enforcing);
    const warmBudget = { count: 1, memoryMb: 512, idleMs: 600_000 };
    const kubeWarm = rig.runnerOn(rig.enforcing, { prestart: warmBudget });
    const dockerOptions: Parameters<typeof createDockerAgentRunner>[0] = {
      ...rig.wiring,
      docker,
      image: rig.image,
      hostInstanceId: `bench-${testRun}`,
      labels,
      nameScope: testRun,
      containers: containersConfigSchema.parse({ memory_mb: 512 }),
      prestart: { count: 0, memoryMb: 0, idleMs: 1 },
      networks: { full: { hostAddress: rig.gatewayNetwork.hostAddress }, gateway: rig.gatewayNetwork },
      // The Docker runner's folders are mounted: the group's (the same folder the pods get a copy of) and a session.
      planMounts: (group) => ({
        groupId: group.id,
        isAdmin: false,
        mounts: [
          {
            kind: 'group',
            hostPath: folder(rig.groupsDir, group.id),
            containerPath: '/workspace/group',
            readOnly: false,
          },
          {
            kind: 'session',
            hostPath: folder(sessions, group.id),
            containerPath: '/workspace/session',
            readOnly: false,
          },
        ],
        rejected: [],
        notes: [],
        secretMounts: [],
        sharedMounts: [],
      }),
      hostIds: { uid: process.getuid?.() ?? 1000, gid: process.getgid?.() ?? 1000 },
    };
    const dockerRunner = createDockerAgentRunner(dockerOptions);
    const dockerWarm = createDockerAgentRunner({ ...dockerOptions, prestart: warmBudget });
    /** Waits until the group's pre-started pod or container is there (the pool fills in the background). */
    const warmed = async (ready: () => boolean) => {
      const deadline = performance.now() + 120_000;
      while (!ready()) {
        if (performance.now() > deadline) throw new Error('no pre-started pod or container within 120 s');
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const warmTurn = async (
      runner: AgentRunner & { warm(g: ReturnType<typeof rigGroup>): void },
      pool: () => { groupId: string }[],
      groupId: string,
    ) => {
      runner.warm(rigGroup(groupId));
      await warmed(() => pool().some((c) => c.groupId === groupId));
      return turn(runner, groupId);
    };
    let runId = 1;
    const turn = async (runner: AgentRunner, groupId: string) => {
      const start = performance.now();
      const run = startRigRun(runner, rigRun(runId++, rigGroup(groupId), 'hello'));
      await run.handle.accepted;
      const accepted = performance.now() - start;
      const outcome = await run.handle.done;
      if (!outcome.ok || run.replies.length !== 1) throw new Error(`a turn failed: ${outcome.reason}`);
      return { accepted, total: performance.now() - start };
    };
    // Warm-up: the image's pages, the probe (once per runner), the policy.
    await turn(kube, 'bench-warm');
    await turn(dockerRunner, 'bench-warm');
    await warmTurn(kubeWarm, () => kubeWarm.prestartStatus().containers, 'bench-kw');
    await warmTurn(dockerWarm, () => dockerWarm.prestarted(), 'bench-dw');
    await bareDockerRun(rig.image);

    const bare: number[] = [];
    const onDocker: { accepted: number; total: number }[] = [];
    const onKube: { accepted: number; total: number }[] = [];
    const onKubeWarm: { accepted: number; total: number }[] = [];
    const onDockerWarm: { accepted: number; total: number }[] = [];
    let kubeRequests: string[] = [];
    for (let i = 0; i < TURNS; i++) {
      bare.push(await bareDockerRun(rig.image));
      onDocker.push(await turn(dockerRunner, `bench-d${i}`));
      const requestsBefore = rig.enforcing.requests.length;
      onKube.push(await turn(kube, `bench-k${i}`));
      kubeRequests = kubeRequests.concat(rig.enforcing.requests.slice(requestsBefore));
      onKubeWarm.push(await warmTurn(kubeWarm, () => kubeWarm.prestartStatus().containers, 'bench-kw'));
      onDockerWarm.push(await warmTurn(dockerWarm, () => dockerWarm.prestarted(), 'bench-dw'));
    }
    const perRun = (what: RegExp) => kubeRequests.filter((r) => what.test(r)).length / TURNS;
    await dockerRunner.close();
    await dockerWarm.close();
    await kubeWarm.close();
    const bareMs = median(bare);
    const dockerTotal = median(onDocker.map((t) => t.total));
    const kubeTotal = median(onKube.map((t) => t.total));
    const kubeWarmTotal = median(onKubeWarm.map((t) => t.total));
    const dockerWarmTotal = median(onDockerWarm.map((t) => t.total));
    const ms = (n: number) => Math.round(n);
    return {
      turns: TURNS,
      bare_docker_run_median_ms: ms(bareMs),
      docker_runner_start_to_accepted_median_ms: ms(median(onDocker.map((t) => t.accepted))),
      docker_runner_turn_median_ms: ms(dockerTotal),
      kube_runner_start_to_accepted_median_ms: ms(median(onKube.map((t) => t.accepted))),
      kube_runner_turn_median_ms: ms(kubeTotal),
      kube_warm_pod_start_to_accepted_median_ms: ms(median(onKubeWarm.map((t) => t.accepted))),
      kube_warm_pod_turn_median_ms: ms(kubeWarmTotal),
      docker_prestarted_turn_median_ms: ms(dockerWarmTotal),
      docker_runner_vs_bare_docker_run: Number((dockerTotal / bareMs).toFixed(2)),
      kube_runner_vs_bare_docker_run: Number((kubeTotal / bareMs).toFixed(2)),
      kube_warm_pod_vs_bare_docker_run: Number((kubeWarmTotal / bareMs).toFixed(2)),
      docker_prestarted_vs_bare_docker_run: Number((dockerWarmTotal / bareMs).toFixed(2)),
      kube_vs_docker_runner: Number((kubeTotal / dockerTotal).toFixed(2)),
      kube_warm_vs_cold: Number((kubeWarmTotal / kubeTotal).toFixed(2)),
      api_requests_per_run: Number((kubeRequests.length / TURNS).toFixed(1)),
      api_creates_deletes_per_run: `${perRun(/^POST .*\/pods$/)} create, ${perRun(/^DELETE /)} delete`,
      api_watches_per_run: perRun(/^GET .*\/pods$/),
      api_streams_per_run: `${perRun(/\/attach$/)} attach, ${perRun(/\/exec$/)} exec`,
    };
  } finally {
    await rig.close();
    fs.rmSync(sessions, { recursive: true, force: true });
    await removeOrphans(docker, { exceptHostInstanceId: 'none', onlyWithLabels: labels }).catch(() => 0);
  }
}

if (isMain(import.meta.url))
  printFigures('Kubernetes runner on the fake API server vs the Docker runner', await benchKubeRunner());
