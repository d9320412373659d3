/**
 * Agent boot, before and after, in one run: from Docker having started the container (launchContainer
 * returned) until the agent's "agent ready" line reaches the host, for two images that differ only in how
 * the agent is bundled and started.
 *
 * - before: the agent as it was shipped before issue 16's boot work: one ESM file, not minified, no code
 *   cache, default young generation, and everything loaded before "agent ready": the run controller with
 *   its tools and classic zod's whole namespace (the agent imported `{ z }` from 'zod', which brings every
 *   locale), the bash parser and fetch (an entry that loads all of these, then the agent). Only the
 *   protocol's schemas are today's (zod's functional API; classic zod is loaded anyway). Built FROM the
 *   image under test, so everything else (base, node, tools) is the same.
 * - after: the image as the product builds it (CommonJS chunks through their V8 code caches, minified,
 *   --min-semi-space-size, only what run.start needs before "agent ready"; the run controller, the parser
 *   and fetch load once the agent listens).
 *
 * Both run with the production container hardening and limits, alternated so that drift hits both alike.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type Docker from 'dockerode';
import { build } from 'esbuild';
import { containersConfigSchema } from '../../host/containers/run/container-config.ts';
import { launchContainer } from '../../host/containers/run/container-launch.ts';
import { buildImage } from '../../host/containers/image/image-docker-build.ts';
import { median, round } from './stats.ts';

const READY_TIMEOUT_MS = 30_000;

/**
 * The entry of the "before" agent: the run controller and classic zod load, and the parser and fetch start
 * loading, before the agent itself boots.
 */
function eagerEntry(agentSrc: string): string {
  const at = (p: string) => JSON.stringify(path.join(agentSrc, p));
  return [
    `import { z as classicZod } from 'zod';`,
    `import * as controllerWiring from ${at('run/controller-wiring.ts')};`,
    `void classicZod; void controllerWiring;`,
    `import { loadBashClassifier } from ${at('bash-gate/load-classifier.ts')};`,
    `import { createBashClassifier } from ${at('bash-gate/classifier.ts')};`,
    `void loadBashClassifier({ create: (w) => createBashClassifier(w), scriptUrl: import.meta.url, logger: { warn: () => undefined } });`,
    `void fetch('data:,').catch(() => undefined);`,
    `await import(${at('main.ts')});`,
    '',
  ].join('\n');
}

/**
 * An ENTRYPOINT that starts `node <args>` the way images did before the launcher (issue 22): tini as PID 1
 * under the agent's uid, no command executor. The host still starts the container as root and passes
 * <agent uid:gid> <commands uid:gid>; setpriv drops to the first and keeps no capability.
 */
export function oldEntrypoint(...nodeArgs: string[]): string {
  const start =
    'exec setpriv --reuid="${1%%:*}" --regid="${1##*:}" --clear-groups --inh-caps=-all --ambient-caps=-all ' +
    `--bounding-set=-all -- /usr/bin/tini -- node ${nodeArgs.join(' ')}`;
  return JSON.stringify(['/bin/bash', '-c', start, 'old-entrypoint']);
}

/** Builds the "before" image on top of `image`: the old bundle as /app/agent-before.mjs, run directly. */
async function buildBeforeImage(docker: Docker, image: string, projectRoot: string, tmp: string) {
  const entry = path.join(tmp, 'before-entry.ts');
  fs.writeFileSync(entry, eagerEntry(path.join(projectRoot, 'container-agent', 'src')));
  const outFile = path.join(tmp, 'dist', 'agent-before.mjs');
  // As bundleAgent built it before: ESM, not minified, a require for CommonJS dependencies.
  await build({
    entryPoints: [entry],
    outfile: outFile,
    absWorkingDir: projectRoot,
    // The entry lies in a temporary folder: 'zod' resolves from the project.
    nodePaths: [path.join(projectRoot, 'node_modules')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'silent',
    legalComments: 'none',
    banner: {
      js: "import { createRequire as __carapaceCreateRequire } from 'node:module';\nconst require = __carapaceCreateRequire(import.meta.url);",
    },
  });
  const dockerfile = path.join(tmp, 'Dockerfile.before');
  fs.writeFileSync(
    dockerfile,
    `FROM ${image}\nCOPY dist/ /app/\nENTRYPOINT ${oldEntrypoint('/app/agent-before.mjs')}\n`,
  );
  const tag = `carapace-agent-bench-boot:before-${process.pid}`;
  await buildImage({ docker, dockerfile, bundleFiles: [outFile], tag });
  return tag;
}

/**
 * Starts one container of `image` and times start → "agent ready"; `whenReady` runs then (untimed), and the
 * container is removed after.
 */
export async function bootOnce(
  docker: Docker,
  image: string,
  n: number,
  hostInstanceId: string,
  onLine: (text: string) => void = () => undefined,
  whenReady: (containerId: string) => Promise<void> = async () => undefined,
): Promise<number> {
  const limits = containersConfigSchema.parse({});
  const proc = await launchContainer(docker, {
    groupId: 'bench-boot',
    runId: `${process.pid}-${n}`,
    image,
    mounts: [],
    // Never contacted: the agent only parses it at start.
    env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', TZ: 'UTC' },
    network: { mode: 'full' },
    limits: { memoryMb: limits.memory_mb, cpus: limits.cpus, pids: limits.pids },
    timeouts: { hardMs: 60_000, idleMs: 60_000 },
    hostInstanceId,
  });
  const started = performance.now();
  try {
    const ms = await new Promise<number>((resolve, reject) => {
      let seen = '';
      const timer = setTimeout(
        () => reject(new Error(`${image} did not log "agent ready" within ${READY_TIMEOUT_MS} ms: ${seen}`)),
        READY_TIMEOUT_MS,
      );
      proc.stderr.on('data', (chunk: Buffer) => {
        seen = (seen + chunk.toString('utf8')).slice(-4000);
        if (seen.includes('"agent ready"')) {
          clearTimeout(timer);
          onLine(seen);
          resolve(performance.now() - started);
        }
      });
      void proc.exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`${image} exited before "agent ready": ${seen}`));
      });
    });
    await whenReady(proc.id);
    return ms;
  } finally {
    await proc.stop('measured', 0);
  }
}

/** Median start → ready of the product's image and of the "before" image built on it, same run. */
export async function benchAgentBoot(
  docker: Docker,
  image: string,
  options: { projectRoot: string; rounds?: number },
): Promise<Record<string, number | string>> {
  const rounds = options.rounds ?? 9;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-boot-'));
  const hostInstanceId = `bench-boot-${process.pid}`;
  let before: string | undefined;
  try {
    before = await buildBeforeImage(docker, image, options.projectRoot, tmp);
    // Warm-up: page cache, image layers.
    await bootOnce(docker, before, 0, hostInstanceId);
    await bootOnce(docker, image, 0, hostInstanceId);
    const beforeMs: number[] = [];
    const afterMs: number[] = [];
    // The agent says so when node rejected its code cache (another node or other flags than it was made with).
    let cacheRejected = 0;
    const noteCache = (text: string) => {
      if (text.includes('code cache does not fit')) cacheRejected += 1;
    };
    for (let i = 1; i <= rounds; i++) {
      beforeMs.push(await bootOnce(docker, before, i * 2, hostInstanceId));
      afterMs.push(await bootOnce(docker, image, i * 2 + 1, hostInstanceId, noteCache));
    }
    const b = median(beforeMs);
    const a = median(afterMs);
    return {
      'agent boot rounds': rounds,
      'agent boot before: start → ready median ms (ESM, everything loaded before ready)': Math.round(b),
      'agent boot after: start → ready median ms (chunks, code cache, run controller after ready)':
        Math.round(a),
      'agent boot after/before ratio (goal <= 0.5)': round(a / b, 2),
      'agent boot after: code cache taken (runs)': `${rounds - cacheRejected} of ${rounds}`,
    };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (before)
      await docker
        .getImage(before)
        .remove({ force: true })
        .catch(() => undefined);
  }
}
