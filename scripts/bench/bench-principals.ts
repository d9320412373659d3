/**
 * What separating commands from the agent costs (issue 22), before and after in one run.
 *
 * - Container start → "agent ready", and the idle container's memory, for the product's image (launch.sh:
 *   the executor and tini + the agent under two uids) against the same image started the old way (tini as
 *   PID 1 running the agent under its uid, no launcher and no executor), alternated.
 * - Per command: the bash tool running `true` (a local command, reported to nobody) with bash spawned by the
 *   agent's own process, as before, against the same command sent to the command executor (the bundled
 *   executor.cjs in a child process, on pipes, as in the container), alternated.
 *
 *   node --import tsx scripts/bench/bench-principals.ts
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import Docker from 'dockerode';
import { connectCommandExecutor } from '../../container-agent/src/executor/client.ts';
import { executorCommands, type CommandRunner } from '../../container-agent/src/executor/command-runner.ts';
import { createBashClassifier } from '../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../container-agent/src/bash-gate/wasm-files.ts';
import { commandEnvironment, createBashTool } from '../../container-agent/src/tools/bash.ts';
import { bundleAgent, defaultAgentPaths, EXECUTOR_FILE } from '../../host/containers/image/agent-bundle.ts';
import { buildImage } from '../../host/containers/image/image-docker-build.ts';
import { ensureAgentImage } from '../../host/containers/image/image-ensure.ts';
import { containerMemoryBytes } from '../../host/containers/run/container-memory.ts';
import { PROJECT_ROOT } from '../../test/fixtures/agent-entries/probe-image.ts';
import { inProcessCommands } from '../../test/helpers/in-process-commands.ts';
import { bootOnce, oldEntrypoint } from './bench-agent-boot.ts';
import { isMain, median, percentile, printFigures, round } from './stats.ts';

const BOOT_ROUNDS = 9;
const COMMANDS = 200;
const WARMUP = 20;

/** The product's image started as before issue 22: tini as PID 1 under the agent's uid, the agent its child. */
async function buildOnePrincipalImage(docker: Docker, image: string, tmp: string): Promise<string> {
  const dockerfile = path.join(tmp, 'Dockerfile.one-principal');
  fs.writeFileSync(
    dockerfile,
    `FROM ${image}\nENTRYPOINT ${oldEntrypoint('--min-semi-space-size=16', '/app/agent.cjs')}\n`,
  );
  const tag = `carapace-agent-bench-principals:before-${process.pid}`;
  await buildImage({ docker, dockerfile, bundleFiles: [], tag });
  return tag;
}

async function benchBoot(docker: Docker, tmp: string): Promise<Record<string, number | string>> {
  const { tag: image } = await ensureAgentImage({ docker, projectRoot: PROJECT_ROOT });
  const before = await buildOnePrincipalImage(docker, image, tmp);
  const hostInstanceId = `bench-principals-${process.pid}`;
  const samples = {
    before: [] as number[],
    after: [] as number[],
    beforeMem: [] as number[],
    afterMem: [] as number[],
  };
  const memoryInto = (into: number[]) => async (id: string) => {
    // Once the run controller has loaded as well (it loads right after "agent ready").
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const bytes = await containerMemoryBytes(docker, id);
    if (bytes !== undefined) into.push(bytes / 1024 / 1024);
  };
  try {
    await bootOnce(docker, before, 0, hostInstanceId);
    await bootOnce(docker, image, 1, hostInstanceId);
    for (let i = 1; i <= BOOT_ROUNDS; i++) {
      samples.before.push(
        await bootOnce(docker, before, i * 2, hostInstanceId, undefined, memoryInto(samples.beforeMem)),
      );
      samples.after.push(
        await bootOnce(docker, image, i * 2 + 1, hostInstanceId, undefined, memoryInto(samples.afterMem)),
      );
    }
  } finally {
    await docker
      .getImage(before)
      .remove({ force: true })
      .catch(() => undefined);
  }
  const b = median(samples.before);
  const a = median(samples.after);
  return {
    'boot rounds': BOOT_ROUNDS,
    'boot before (one principal): start → ready median ms': Math.round(b),
    'boot after (launcher, two principals): start → ready median ms': Math.round(a),
    'boot after - before ms': Math.round(a - b),
    'idle container memory before median MiB': round(median(samples.beforeMem), 1),
    'idle container memory after median MiB': round(median(samples.afterMem), 1),
  };
}

async function benchCommands(tmp: string): Promise<Record<string, number | string>> {
  // The executor runs under another uid: it reads its script here and runs commands in cwd.
  fs.chmodSync(tmp, 0o755);
  const outFile = path.join(tmp, 'dist', 'agent.cjs');
  await bundleAgent({ entry: defaultAgentPaths(PROJECT_ROOT).entry, outFile });
  // As in the container: another uid than this process when it can have one.
  const asOther = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  const child = spawn(process.execPath, [path.join(tmp, 'dist', EXECUTOR_FILE)], {
    stdio: ['pipe', 'pipe', 'inherit'],
    cwd: '/',
    ...asOther,
  });
  const executor = connectCommandExecutor({ input: child.stdout, output: child.stdin });
  const uid = (await executor.identity).uid;
  const separated = executorCommands(executor, () => ({
    commandUid: uid,
    launcherCommandUid: uid,
    status: () =>
      'Uid:\t1\t1\t1\t1\n' +
      ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'].map((s) => `${s}:\t0`).join('\n'),
    environOwner: () => 0,
    sessionFolder: () => ({ isDirectory: true, uid: 1, mode: 0o40700 }),
  }));
  const cwd = fs.mkdtempSync(path.join(tmp, 'cwd-'));
  fs.chmodSync(cwd, 0o777);
  const classifier = await createBashClassifier(resolveBashGateWasmPaths());
  const tool = (commands: CommandRunner) =>
    createBashTool({
      classifier: { classify: (c) => classifier.classify(c) },
      host: { request: () => Promise.reject(new Error('unused')), notify: () => undefined },
      cwd,
      env: commandEnvironment(process.env, { timezone: 'UTC', home: cwd }),
      checkTimeoutMs: 1000,
      commands,
    });
  const tools = { before: tool(inProcessCommands), after: tool(separated) };
  const signal = new AbortController().signal;
  const once = async (which: 'before' | 'after') => {
    const start = performance.now();
    const out = await tools[which].run({ command: 'true' }, { signal });
    if (out !== 'exit code 0') throw new Error(`the command did not run ${which}: ${out}`);
    return performance.now() - start;
  };
  const samples = { before: [] as number[], after: [] as number[] };
  try {
    for (let i = 0; i < WARMUP; i++) {
      await once('before');
      await once('after');
    }
    for (let i = 0; i < COMMANDS; i++) {
      samples.before.push(await once('before'));
      samples.after.push(await once('after'));
    }
  } finally {
    child.stdin.end();
  }
  const b = percentile(samples.before, 50);
  const a = percentile(samples.after, 50);
  return {
    commands: COMMANDS,
    'command before (spawned by the agent) p50 ms': round(b, 2),
    'command after (through the executor) p50 ms': round(a, 2),
    'command after - before p50 ms': round(a - b, 2),
    'command after/before p90': round(percentile(samples.after, 90) / percentile(samples.before, 90), 2),
  };
}

export async function benchPrincipals(): Promise<Record<string, number | string>> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-principals-'));
  try {
    return { ...(await benchCommands(tmp)), ...(await benchBoot(new Docker(), tmp)) };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url))
  printFigures('commands and the agent as separate principals', await benchPrincipals());
