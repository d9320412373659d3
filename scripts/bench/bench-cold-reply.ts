/**
 * Reply latency: one full turn through the real product (fake provider on loopback, `startHost` with
 * the production runner: real container, real agent, real gateway), from posting a message over the local
 * console socket until its reply is delivered to the console client, minus the time the provider itself
 * spent answering. Two hosts take turns: one without pre-started containers (every run starts its own, cold)
 * and one with them (each run takes the container its group got ahead of time). Baseline: `docker run --rm
 * --entrypoint true <the same agent image>`, measured in the same run and interleaved with the turns. The
 * responder answers in text only, so a turn is one LLM call and one reply. It also reports when a run frees
 * its slot after the reply, and the memory of an idle pre-started container (from the host's own measurement).
 *
 * To show where a turn's time goes it also records, from outside the container: docker events (create,
 * start, die, destroy), the host's debug log lines (run started/ended, the agent's own log lines with their
 * timestamps: "agent ready", "run.start", "run finished") and the fake provider's request times.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import Docker from 'dockerode';
import { z } from 'zod';
import { createLocalClient } from '../../host/channels/local/local-client.ts';
import { sendAndWait } from '../../host/channels/local/send-and-wait.ts';
import { PROJECT_ROOT } from '../../host/cli/cli-context.ts';
import { productionRunnerFactory } from '../../host/app/production-runner.ts';
import { loadSecrets } from '../../host/config/secrets.ts';
import { dataFolderLabel, LABEL_DATA } from '../../host/containers/run/data-folder-label.ts';
import { createLogger } from '../../host/logging/create-logger.ts';
import { startHost, type HostDeps } from '../../host/app/host.ts';
import type { AgentRunner } from '../../host/router/agent-runner.ts';
import { createSecretScanner } from '../../host/security/secrets/index.ts';
import { reply, startFakeProvider, type FakeRequest } from '../../test/fakes/fake-provider.ts';
import { fakeProviderHostSetup } from '../../test/fakes/fake-provider-host-setup.ts';
import { benchAgentBoot } from './bench-agent-boot.ts';
import { benchLaunchPlan } from './bench-launch-plan.ts';
import { isMain, median, printFigures, round } from './stats.ts';

const TURNS = 9;
const TURN_TIMEOUT_MS = 120_000;
const PROVIDER_KEY = 'sk-bench-provider-key-0123456789';
const REPLY_TEXT = 'Noted, thank you.';

/** Epoch milliseconds (Docker, pino, the agent's ISO times) on this process's performance.now() scale. */
const fromEpoch = (epochMs: number) => epochMs - performance.timeOrigin;

/**
 * `docker run --rm` of the agent image, timed. With `--entrypoint true` it is the bare container
 * lifecycle (the image's entrypoint is the agent, which would otherwise run); without it, the agent's
 * node starts, loads its bundle and exits at once on its missing environment: container plus node start.
 */
function dockerRun(image: string, bare: boolean): Promise<number> {
  const args = bare ? ['run', '--rm', '--entrypoint', 'true', image] : ['run', '--rm', image];
  const start = performance.now();
  return new Promise((resolve, reject) =>
    execFile('docker', args, { timeout: 60_000 }, (error, _out, stderr) => {
      const ms = performance.now() - start;
      // The agent without its environment exits non-zero by design; docker's own failures are 125-127.
      const code = (error as { code?: unknown } | null)?.code;
      if (error && (bare || typeof code !== 'number' || code >= 125))
        reject(new Error(`docker ${args.join(' ')}: ${stderr || error.message}`));
      else resolve(ms);
    }),
  );
}

const hostLine = z.looseObject({ time: z.number(), msg: z.string() });
const agentLine = z.looseObject({ time: z.string(), msg: z.string() });
const dockerEvent = z.looseObject({ Action: z.string().optional(), timeNano: z.number() });

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

interface Mark {
  at: number;
  what: string;
}

/** Records every host log line (and the agent lines it relays) as a timestamped mark. */
function createLogRecorder(marks: Mark[]) {
  let image: string | undefined;
  const stdioLagMs: number[] = [];
  const prestartedMemoryBytes: number[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const text of chunk.toString('utf8').split('\n')) {
        if (!text) continue;
        const parsed = hostLine.safeParse(parseJson(text));
        if (!parsed.success) continue;
        const line = parsed.data;
        if (line.msg === 'agent runtime ready' && typeof line.image === 'string') image = line.image;
        if (line.msg === 'pre-started container idle' && typeof line.memoryBytes === 'number')
          prestartedMemoryBytes.push(line.memoryBytes);
        if (line.msg === 'agent log' && typeof line.agent === 'string') {
          // The agent's own timestamp says when it happened; the host line only when stderr was read.
          const inner = agentLine.safeParse(parseJson(line.agent));
          if (inner.success) {
            const at = Date.parse(inner.data.time);
            marks.push({ at: fromEpoch(at), what: `agent: ${inner.data.msg}` });
            // From the agent writing a line to the host reading it: the container's stdio path.
            stdioLagMs.push(line.time - at);
          }
          continue;
        }
        marks.push({ at: fromEpoch(line.time), what: `host: ${line.msg}` });
      }
      done();
    },
  });
  return { stream, image: () => image, stdioLagMs, prestartedMemoryBytes };
}

/** Follows docker's container events for this bench's data folder. */
async function followDockerEvents(docker: Docker, dataLabel: string, marks: Mark[]) {
  const events = (await docker.getEvents({
    filters: { type: ['container'], label: [`${LABEL_DATA}=${dataLabel}`] },
  })) as NodeJS.ReadableStream & { destroy(): void };
  let pending = '';
  events.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    let newline;
    while ((newline = pending.indexOf('\n')) !== -1) {
      const text = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      const parsed = dockerEvent.safeParse(parseJson(text));
      if (parsed.success && parsed.data.Action)
        marks.push({ at: fromEpoch(parsed.data.timeNano / 1e6), what: `docker: ${parsed.data.Action}` });
    }
  });
  events.on('error', () => undefined);
  return () => events.destroy();
}

/**
 * Wraps the production runner at the router's seam (no product code changes) to note when the host asks
 * for a run, when the agent acknowledged run.start, and when its reply reached the host and was stored.
 */
function observedRunner(
  createRunner: HostDeps['createRunner'],
  mark: (what: string) => void,
): HostDeps['createRunner'] {
  return async (deps) => {
    const runtime = await createRunner(deps);
    const runner: AgentRunner = {
      start(ctx, callbacks) {
        mark('host: runner.start');
        const handle = runtime.runner.start(ctx, {
          ...callbacks,
          async reply(text) {
            mark('host: reply received');
            await callbacks.reply(text);
            mark('host: reply stored');
          },
        });
        handle.accepted.then(
          () => mark('host: run.start acknowledged'),
          () => undefined,
        );
        return handle;
      },
    };
    return { ...runtime, runner };
  };
}

interface Turn {
  postedAt: number;
  replyAt: number;
  returnedAt: number;
  providerMs: number;
  requests: number;
  marks: Mark[];
}

/** First mark named `what` at or after `from` (NaN if none). */
function markAfter(turn: Turn, what: string, from = turn.postedAt): number {
  return turn.marks.find((m) => m.what === what && m.at >= from - 1)?.at ?? Number.NaN;
}

/** A host with the production runner on its own data folder, driven over its console socket. */
interface BenchHost {
  image: string;
  turn(n: number): Promise<Turn>;
}

async function startBenchHost(opts: {
  docker: Docker;
  dir: string;
  providerUrl: string;
  marks: Mark[];
  recorder: ReturnType<typeof createLogRecorder>;
  providerSpans: { start: number; end: number }[];
  prestart: number;
  cleanups: (() => unknown)[];
}): Promise<BenchHost> {
  const { docker, marks, recorder, providerSpans, cleanups } = opts;
  const setup = fakeProviderHostSetup({
    dir: opts.dir,
    providerUrl: opts.providerUrl,
    keyEnv: 'BENCH_PROVIDER_KEY',
    key: PROVIDER_KEY,
  });
  const { env, paths } = setup;
  const config = {
    ...setup.config,
    runs: { ...setup.config.runs, prestart: { ...setup.config.runs.prestart, count: opts.prestart } },
  };
  const secrets = loadSecrets({ envFile: paths.envFile, env });
  // Reading the key is what makes it a held secret, as at a real start.
  secrets.get(config.provider.api_key_env);
  const scanner = createSecretScanner({ heldSecrets: secrets.held() });
  const logger = createLogger({ level: 'debug', redact: scanner.redact, destination: recorder.stream });

  // Same label the runtime puts on its containers, so events and the final sweep stay in our lane.
  const dataLabel = dataFolderLabel(paths.dataDir);
  const stopEvents = await followDockerEvents(docker, dataLabel, marks);
  cleanups.push(stopEvents);
  cleanups.push(async () => {
    const left = await docker.listContainers({
      all: true,
      filters: { label: [`${LABEL_DATA}=${dataLabel}`] },
    });
    for (const c of left)
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined);
  });

  const imageBefore = recorder.image();
  const host = await startHost({
    paths,
    config,
    logger,
    redact: scanner.redact,
    createRunner: observedRunner(
      productionRunnerFactory({
        config,
        paths,
        projectRoot: PROJECT_ROOT,
        secrets,
        scanner,
        onProgress: () => undefined,
      }),
      (what) => marks.push({ at: performance.now(), what }),
    ),
  });
  cleanups.push(() => host.stop('bench over'));
  const image = recorder.image();
  if (!image || (imageBefore && image !== imageBefore))
    throw new Error('the host did not report an agent image (is Docker usable, did the build fail?)');
  const client = createLocalClient(paths.socketFile);
  const seen = (what: string, after: number) => marks.some((m) => m.what === what && m.at > after);

  return {
    image,
    async turn(n) {
      const postedAt = performance.now();
      let replyAt = Number.NaN;
      const result = await sendAndWait({
        client,
        group: 'main',
        text: `Please note item ${n}.`,
        timeoutMs: TURN_TIMEOUT_MS,
        onReply: () => {
          if (Number.isNaN(replyAt)) replyAt = performance.now();
        },
      });
      const returnedAt = performance.now();
      if (result.kind !== 'answered' || Number.isNaN(replyAt))
        throw new Error(`turn ${n} did not answer: ${JSON.stringify(result)}`);
      // Let the container go away completely, and the next one be pre-started and booted, so the next
      // measurement starts from a quiet engine.
      await host.whenIdle();
      const settled = Date.now() + 20_000;
      while (
        Date.now() < settled &&
        !(
          seen('docker: destroy', postedAt) &&
          (opts.prestart === 0 || seen('host: pre-started container idle', postedAt))
        )
      )
        await new Promise((r) => setTimeout(r, 20));
      const spans = providerSpans.filter((s) => s.start >= postedAt && s.start <= replyAt);
      return {
        postedAt,
        replyAt,
        returnedAt,
        providerMs: spans.reduce((sum, s) => sum + (s.end - s.start), 0),
        requests: spans.length,
        marks: marks
          .filter((m) => m.at >= postedAt - 1 && m.at <= returnedAt + 2_000)
          .sort((a, b) => a.at - b.at),
      };
    },
  };
}

/** Pre-started containers' idle memory, from the host's log line about each. */
function idleMemoryOf(recorder: ReturnType<typeof createLogRecorder>): number[] {
  return recorder.prestartedMemoryBytes.map((b) => b / (1024 * 1024));
}

export async function benchColdReply(
  options: { turns?: number } = {},
): Promise<Record<string, number | string>> {
  const turns = options.turns ?? TURNS;
  // Other work on the machine slows containers and node starts; the load average says how busy it was.
  const loadAtStart = os.loadavg()[0] ?? 0;
  const docker = new Docker();
  try {
    await docker.ping();
  } catch (err) {
    return { skipped: `needs a Docker engine, and none answers: ${(err as Error).message}` };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-'));
  const cleanups: (() => unknown)[] = [() => fs.rmSync(dir, { recursive: true, force: true })];
  const marks: Mark[] = [];
  try {
    // The provider's own time: arrival to the last byte written, per request.
    const providerSpans: { start: number; end: number }[] = [];
    const fake = await startFakeProvider({
      apiKey: PROVIDER_KEY,
      responder: (request: FakeRequest) => {
        void fake.waitForEnd(request).then(() => {
          providerSpans.push({ start: request.receivedAt, end: performance.now() });
          marks.push(
            { at: request.receivedAt, what: 'provider: request' },
            { at: performance.now(), what: 'provider: answered' },
          );
        });
        return reply.text(REPLY_TEXT);
      },
    });
    cleanups.push(() => fake.close());
    const recorder = createLogRecorder(marks);
    const hostOptions = { docker, providerUrl: fake.openaiBaseUrl, marks, recorder, providerSpans, cleanups };
    // Two hosts, one after the other on data folders of their own: every run cold (as without pre-starting),
    // then every run in the container its group got ahead of time.
    const cold = await startBenchHost({ ...hostOptions, dir: path.join(dir, 'cold'), prestart: 0 });
    const warm = await startBenchHost({ ...hostOptions, dir: path.join(dir, 'warm'), prestart: 1 });
    const image = cold.image;

    // Warm-up: one turn of each and one bare run (page cache, image layers, JIT), then alternate.
    await cold.turn(0);
    await warm.turn(0);
    await dockerRun(image, true);
    await dockerRun(image, false);
    const measured: Turn[] = [];
    const prestarted: Turn[] = [];
    const bare: number[] = [];
    const withNode: number[] = [];
    for (let i = 1; i <= turns; i++) {
      measured.push(await cold.turn(i));
      bare.push(await dockerRun(image, true));
      prestarted.push(await warm.turn(i));
      withNode.push(await dockerRun(image, false));
    }

    // BENCH_TRACE=1: every measured turn's timeline, relative to posting, on stderr.
    if (process.env.BENCH_TRACE)
      for (const [label, list] of [
        ['cold', measured],
        ['pre-started', prestarted],
      ] as const)
        for (const [i, t] of list.entries()) {
          const lines = [
            ...t.marks,
            { at: t.replyAt, what: 'client: reply delivered' },
            { at: t.returnedAt, what: 'client: sendAndWait returned' },
          ]
            .sort((a, b) => a.at - b.at)
            .map((m) => `  ${(m.at - t.postedAt).toFixed(1).padStart(8)} ms  ${m.what}`);
          process.stderr.write(`${label} turn ${i + 1}\n${lines.join('\n')}\n`);
        }
    const replyMs = (list: Turn[]) => list.map((t) => t.replyAt - t.postedAt - t.providerMs);
    const turnMs = measured.map((t) => t.returnedAt - t.postedAt - t.providerMs);
    const bareMs = median(bare);
    // Where the time goes: medians of the gaps between marks seen from outside the container.
    const gapOf = (list: Turn[]) => (from: (t: Turn) => number, to: (t: Turn) => number) =>
      round(median(list.map((t) => to(t) - from(t)).filter((v) => Number.isFinite(v))), 1);
    const gap = gapOf(measured);
    const warmGap = gapOf(prestarted);
    const runStarted = (t: Turn) => markAfter(t, 'host: run started');
    const created = (t: Turn) => markAfter(t, 'docker: create');
    const started = (t: Turn) => markAfter(t, 'docker: start');
    const agentReady = (t: Turn) => markAfter(t, 'agent: agent ready');
    const runStart = (t: Turn) => markAfter(t, 'agent: run.start');
    const tookPrestarted = (t: Turn) => markAfter(t, 'host: run took a pre-started container');
    const acked = (t: Turn) => markAfter(t, 'host: run.start acknowledged');
    const request = (t: Turn) => markAfter(t, 'provider: request');
    const replyReceived = (t: Turn) => markAfter(t, 'host: reply received');
    const replyStored = (t: Turn) => markAfter(t, 'host: reply stored');
    const answered = (t: Turn) => markAfter(t, 'provider: answered');
    const finished = (t: Turn) => markAfter(t, 'agent: run finished');
    const died = (t: Turn) => markAfter(t, 'docker: die');
    const ended = (t: Turn) => markAfter(t, 'host: run ended');
    const idleMb = idleMemoryOf(recorder);
    // Start → ready of the agent as shipped before the boot work and as now, in this same run.
    const boot = await benchAgentBoot(docker, image, { projectRoot: PROJECT_ROOT, rounds: turns });
    // launch()'s mount plan alone, main's lstat walk against the watched tree, alternated (same run).
    const plan = Object.fromEntries(
      Object.entries(await benchLaunchPlan()).map(([k, v]) => [`launch plan: ${k}`, v]),
    );
    return {
      turns,
      cpus: os.cpus().length,
      load_avg_1m_at_start: round(loadAtStart, 2),
      load_avg_1m_at_end: round(os.loadavg()[0] ?? 0, 2),
      agent_image: image,
      llm_requests_per_turn: median(measured.map((t) => t.requests)),
      provider_ms_per_turn: round(median(measured.map((t) => t.providerMs)), 1),
      'docker_run_rm_true_median_ms (--entrypoint true)': Math.round(bareMs),
      docker_run_rm_agent_node_start_median_ms: Math.round(median(withNode)),
      'pre-started: reply_minus_provider_median_ms': Math.round(median(replyMs(prestarted))),
      'pre-started: reply_vs_docker_run_ratio (goal <= 0.15)': round(median(replyMs(prestarted)) / bareMs, 2),
      'cold: reply_minus_provider_median_ms': Math.round(median(replyMs(measured))),
      'cold: reply_vs_docker_run_ratio (before pre-starting: 1.26-1.44)': round(
        median(replyMs(measured)) / bareMs,
        2,
      ),
      'cold: turn_complete_minus_provider_median_ms': Math.round(median(turnMs)),
      'cold: turn_complete_vs_docker_run_ratio': round(median(turnMs) / bareMs, 2),
      'agent boot: docker start → agent ready ms (cold runs)': gap(started, agentReady),
      'agent boot vs docker_run_rm_true ratio': round(gap(started, agentReady) / bareMs, 2),
      ...boot,
      'slot release: reply delivered → run ended ms (cold)': gap((t) => t.replyAt, ended),
      'slot release: reply delivered → run ended ms (pre-started)': warmGap((t) => t.replyAt, ended),
      'slot release: run ended → docker die ms (removal, off the path)': gap(ended, died),
      'idle memory per pre-started container, median MiB': round(median(idleMb), 1),
      'idle memory per pre-started container, max MiB': round(Math.max(...idleMb), 1),
      'agent stderr line → host, median lag ms (1 ms clock resolution)': median(recorder.stdioLagMs),
      'pre-started: post → LLM request median ms (goal <= 40)': warmGap((t) => t.postedAt, request),
      'split (pre-started): post → host run started ms': warmGap((t) => t.postedAt, runStarted),
      'split (pre-started): run started → container taken ms (launch: mount plan, fingerprint check)':
        warmGap(runStarted, tookPrestarted),
      'split (pre-started): container taken → agent run.start ms': warmGap(tookPrestarted, runStart),
      'split (pre-started): agent run.start → LLM request ms': warmGap(runStart, request),
      'split (pre-started): agent run.start → host has ack ms (off the path)': warmGap(runStart, acked),
      'split (pre-started): answered → reply delivered ms': warmGap(answered, (t) => t.replyAt),
      'split (pre-started): answered → host has reply ms (the agent, its frame, the review)': warmGap(
        answered,
        replyReceived,
      ),
      'split (pre-started): host has reply → reply delivered ms (stored, the channel)': warmGap(
        replyReceived,
        (t) => t.replyAt,
      ),
      ...plan,
      'split (cold): post → host run started ms': gap((t) => t.postedAt, runStarted),
      'split (cold): run started → docker create ms': gap(runStarted, created),
      'split (cold): docker create → docker start ms': gap(created, started),
      'split (cold): docker start → agent ready ms': gap(started, agentReady),
      'split (cold): agent ready → agent run.start ms': gap(agentReady, runStart),
      'split (cold): agent run.start → host has ack ms': gap(runStart, acked),
      'split (cold): host has ack → LLM request ms': gap(acked, request),
      'split (cold): LLM request → answered ms': gap(request, answered),
      'split (cold): answered → host has reply ms': gap(answered, replyReceived),
      'split (cold): host has reply → reply stored ms': gap(replyReceived, replyStored),
      'split (cold): reply stored → reply delivered ms': gap(replyStored, (t) => t.replyAt),
      'split (cold): reply → agent run finished ms': gap((t) => t.replyAt, finished),
      'split (cold): run finished → host run ended ms': gap(finished, ended),
      'split (cold): run ended → sendAndWait returned ms': gap(ended, (t) => t.returnedAt),
    };
  } finally {
    for (const fn of cleanups.reverse())
      await Promise.resolve()
        .then(fn)
        .catch(() => undefined);
  }
}

if (isMain(import.meta.url))
  printFigures('cold reply latency (vs. docker run --rm true)', await benchColdReply());
