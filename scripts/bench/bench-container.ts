// Container benchmark: a full launchContainer run of a trivial agent against `docker run --rm`
// of the same image measured in the same run (goal: ratio ≤ 1.3), and the image rebuild after
// an agent-only change against a no-op ensureAgentImage.
// Run: node --import tsx scripts/bench/bench-container.ts
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Docker from 'dockerode';
import { launchContainer } from '../../host/containers/run/container-launch.ts';
import { ensureAgentImage } from '../../host/containers/image/image-ensure.ts';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const REPOSITORY = 'carapace-agent-bench';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function dockerCli(args: string[]): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile('docker', args, (error, _stdout, stderr) =>
      error ? reject(new Error(`docker ${args.join(' ')}: ${stderr}`)) : resolve(),
    ),
  );
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

export async function benchContainer(
  options: { rounds?: number } = {},
): Promise<Record<string, number | string>> {
  const rounds = options.rounds ?? 9;
  const docker = new Docker();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-'));
  const entry = path.join(tmp, 'trivial.ts');
  const outFile = path.join(tmp, 'dist', 'agent.cjs');
  const ensure = () =>
    ensureAgentImage({ docker, projectRoot: PROJECT_ROOT, entry, outFile, repository: REPOSITORY });
  try {
    fs.writeFileSync(entry, `export const build = ${JSON.stringify(String(Date.now()))};\n`);
    const { tag, mode } = await ensure();

    let run = 0;
    const launchOnce = async () => {
      run += 1;
      const proc = await launchContainer(docker, {
        groupId: 'bench',
        runId: `${process.pid}-${run}`,
        image: tag,
        mounts: [],
        env: {},
        network: { mode: 'full' },
        limits: { memoryMb: 512, cpus: 1, pids: 128 },
        timeouts: { hardMs: 60_000, idleMs: 60_000 },
        hostInstanceId: `bench-${process.pid}`,
      });
      proc.stdin.end();
      const exit = await proc.exited;
      if (exit.exitCode !== 0) throw new Error(`trivial run failed: ${JSON.stringify(exit)}`);
    };
    const dockerRunOnce = () => dockerCli(['run', '--rm', tag, 'true']);

    // Warm up both paths (page cache, daemon caches), then alternate so drift hits both alike.
    await launchOnce();
    await dockerRunOnce();
    const launchTimes: number[] = [];
    const dockerRunTimes: number[] = [];
    for (let i = 0; i < rounds; i++) {
      launchTimes.push(await timed(launchOnce));
      dockerRunTimes.push(await timed(dockerRunOnce));
    }

    const noopTimes: number[] = [];
    for (let i = 0; i < 5; i++) noopTimes.push(await timed(ensure));
    const rebuildTimes: number[] = [];
    for (let i = 0; i < 3; i++) {
      fs.writeFileSync(entry, `export const build = ${JSON.stringify(`${Date.now()}-${i}`)};\n`);
      rebuildTimes.push(
        await timed(async () => {
          const result = await ensure();
          if (!result.built) throw new Error('an agent change did not rebuild the image');
        }),
      );
    }

    const launch = median(launchTimes);
    const dockerRun = median(dockerRunTimes);
    const rebuild = median(rebuildTimes);
    const noop = median(noopTimes);
    return {
      build_mode: mode,
      rounds,
      launch_container_median_ms: Math.round(launch),
      docker_run_rm_median_ms: Math.round(dockerRun),
      launch_vs_docker_run_ratio: Number((launch / dockerRun).toFixed(2)),
      launch_goal_ratio: 1.3,
      rebuild_after_agent_change_median_ms: Math.round(rebuild),
      noop_ensure_median_ms: Math.round(noop),
      rebuild_vs_noop_ratio: Number((rebuild / noop).toFixed(1)),
    };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
    const images = await docker.listImages({ filters: { reference: [REPOSITORY] } });
    for (const tag of images.flatMap((i) => i.RepoTags ?? []))
      await docker
        .getImage(tag)
        .remove()
        .catch(() => {});
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await benchContainer();
  for (const [key, value] of Object.entries(result)) console.log(`${key.padEnd(40)} ${value}`);
}
