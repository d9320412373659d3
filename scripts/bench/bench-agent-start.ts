/**
 * The agent's own share of a pre-started turn, without a container: the bundled agent (the image's entry,
 * with the image's node flags) is started as a plain process and left waiting, as a pre-started container
 * waits; then run.start is written, and the time taken until the fake provider has the run's first LLM
 * request and until the agent acknowledged run.start. Baseline: `node -e 0`, measured in the same run and
 * interleaved. The waiting agent's anonymous memory (what a container's cgroup is charged for it; the
 * node binary's pages are shared) is read from /proc while it waits.
 *
 * BENCH_AGENT_BEFORE=<folder holding another checkout's container-agent/src> adds that agent, bundled
 * the same way and alternated with this one: a before/after in one run.
 *
 * BENCH_AGENT_CPU_PROF=<folder> starts each agent with --cpu-prof into that folder and writes, next to the
 * profiles, each round's run.start and LLM request times on the profiles' clock (microseconds of the
 * monotonic clock, as V8 stamps its samples), so a profile can be cut to what happened between the two.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { agentMethods, hostMethods, type RunStartParams } from '../../container-agent/src/protocol.ts';
import { createRpcPeer } from '../../container-agent/src/rpc/peer.ts';
import {
  AGENT_NODE_FLAGS,
  bundleAgent,
  defaultAgentPaths,
} from '../../host/containers/image/agent-bundle.ts';
import { PROJECT_ROOT } from '../../host/cli/cli-context.ts';
import {
  reply,
  startFakeProvider,
  type FakeProvider,
  type FakeRequest,
} from '../../test/fakes/fake-provider.ts';
import { isMain, median, printFigures, round } from './stats.ts';

const KEY = 'gw-bench-agent-start-key';
/** A pre-started container waits for seconds or minutes; this is long enough for the agent to settle. */
const WAIT_BEFORE_START_MS = 2_500;

/** The process's anonymous memory (heap, JIT code, wasm), MiB. */
function anonymousMiB(pid: number): number {
  const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  return Number(/^Anonymous:\s+(\d+)/m.exec(rollup)?.[1] ?? Number.NaN) / 1024;
}

async function nodeStart(): Promise<number> {
  const start = performance.now();
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return performance.now() - start;
}

const params = (runId: number): RunStartParams => ({
  runId,
  group: { id: 'bench', name: 'Bench', isAdmin: false, channel: 'local' },
  assistantName: 'Andy',
  timezone: 'UTC',
  formatting: 'Plain text.',
  messages: [
    {
      id: 1,
      sender: 'u',
      senderName: 'U',
      text: 'Please note this.',
      timestamp: new Date().toISOString(),
      fromAssistant: false,
    },
  ],
  limits: { maxToolSteps: 5, maxOutputTokens: 256, wallTimeMs: 60_000 },
  gatewayKey: KEY,
});

interface Round {
  toRequest: number;
  toAck: number;
  /** From the provider's last byte written to the agent's message.send read by the host side. */
  answerToReply: number;
  idleMiB: number;
}

/** Microseconds of the monotonic clock, the clock of a CPU profile's samples, at `performance.now()` `at`. */
const monotonicMicros = (at: number) =>
  Number(process.hrtime.bigint() / 1000n) - (performance.now() - at) * 1000;

/** Where a round's CPU profile goes, and its label there; absent: no profile. */
interface ProfileTarget {
  dir: string;
  label: string;
}

/** One waiting agent, then its run.start. */
async function oneRound(
  agentFile: string,
  fake: FakeProvider,
  answered: Map<FakeRequest, number>,
  runId: number,
  profile?: ProfileTarget,
): Promise<Round> {
  const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-'));
  const profileFlags = profile
    ? [
        '--cpu-prof',
        '--cpu-prof-interval=100',
        `--cpu-prof-dir=${profile.dir}`,
        `--cpu-prof-name=${profile.label}-${runId}.cpuprofile`,
      ]
    : [];
  const child = spawn(process.execPath, [...AGENT_NODE_FLAGS, ...profileFlags, agentFile], {
    env: {
      PATH: process.env.PATH,
      HOME: workspace,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      CARAPACE_WORKSPACE: workspace,
      CARAPACE_MODEL: 'fake-model',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  try {
    child.stderr.resume();
    let replyAt = Number.NaN;
    let replied!: () => void;
    const replyRead = new Promise<void>((resolve) => (replied = resolve));
    const peer = createRpcPeer({
      input: child.stdout,
      output: child.stdin,
      localMethods: hostMethods,
      remoteMethods: agentMethods,
      // Only what a text answer needs; a run of this bench calls nothing else.
      handlers: {
        'message.send': () => {
          replyAt = performance.now();
          replied();
          return { queued: true as const };
        },
        'run.done': () => ({ ok: true as const }),
      } as never,
    });
    await sleep(WAIT_BEFORE_START_MS);
    const idleMiB = anonymousMiB(child.pid ?? 0);
    const before = fake.requests.length;
    const sentAt = performance.now();
    await peer.request('run.start', params(runId));
    const toAck = performance.now() - sentAt;
    while (fake.requests.length === before) await sleep(1);
    const request = fake.requests[before];
    const receivedAt = request?.receivedAt ?? Number.NaN;
    const toRequest = receivedAt - sentAt;
    await replyRead;
    const answeredAt = (request && answered.get(request)) ?? Number.NaN;
    if (profile)
      fs.appendFileSync(
        path.join(profile.dir, 'rounds.jsonl'),
        JSON.stringify({
          profile: `${profile.label}-${runId}.cpuprofile`,
          runStartMicros: monotonicMicros(sentAt),
          requestMicros: monotonicMicros(receivedAt),
          answeredMicros: monotonicMicros(answeredAt),
          replyMicros: monotonicMicros(replyAt),
        }) + '\n',
      );
    child.stdin.end();
    await new Promise((resolve) => child.once('exit', resolve));
    return { toRequest, toAck, answerToReply: replyAt - answeredAt, idleMiB };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    fs.rmSync(workspace, { recursive: true, force: true });
  }
}

export async function benchAgentStart(options: { rounds?: number; before?: string } = {}) {
  const rounds = options.rounds ?? (Number(process.env.BENCH_AGENT_ROUNDS) || 11);
  const beforeRoot = options.before ?? process.env.BENCH_AGENT_BEFORE;
  const profileDir = process.env.BENCH_AGENT_CPU_PROF
    ? path.resolve(process.env.BENCH_AGENT_CPU_PROF)
    : undefined;
  if (profileDir) fs.mkdirSync(profileDir, { recursive: true });
  const loadAtStart = os.loadavg()[0] ?? 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-'));
  const agents: { label: string; file: string }[] = [];
  try {
    const { entry, outFile } = defaultAgentPaths(PROJECT_ROOT);
    const now = path.join(dir, 'now', path.basename(outFile));
    await bundleAgent({ entry, outFile: now, projectRoot: PROJECT_ROOT });
    agents.push({ label: 'now', file: now });
    if (beforeRoot) {
      const file = path.join(dir, 'before', path.basename(outFile));
      await bundleAgent({
        entry: defaultAgentPaths(beforeRoot).entry,
        outFile: file,
        projectRoot: PROJECT_ROOT,
      });
      agents.push({ label: 'before', file });
    }
    const answered = new Map<FakeRequest, number>();
    const fake: FakeProvider = await startFakeProvider({
      apiKey: KEY,
      responder: (request) => {
        void fake.waitForEnd(request).then(() => answered.set(request, performance.now()));
        return reply.text('Noted.');
      },
    });
    const results = new Map<string, Round[]>(agents.map((a) => [a.label, []]));
    const bare: number[] = [];
    try {
      for (let i = 0; i < rounds; i++) {
        bare.push(await nodeStart());
        for (const agent of agents)
          results
            .get(agent.label)
            ?.push(
              await oneRound(
                agent.file,
                fake,
                answered,
                i + 1,
                profileDir ? { dir: profileDir, label: agent.label } : undefined,
              ),
            );
      }
    } finally {
      await fake.close();
    }
    const bareMs = median(bare);
    const figures: Record<string, number | string> = {
      rounds,
      load_avg_1m_at_start: round(loadAtStart, 2),
      load_avg_1m_at_end: round(os.loadavg()[0] ?? 0, 2),
      'node -e 0 median ms (baseline)': round(bareMs, 1),
    };
    for (const [label, list] of results) {
      const toRequest = median(list.map((r) => r.toRequest));
      figures[`${label}: run.start written → LLM request median ms`] = round(toRequest, 1);
      figures[`${label}: run.start → LLM request vs node -e 0 ratio`] = round(toRequest / bareMs, 2);
      figures[`${label}: run.start written → ack median ms`] = round(median(list.map((r) => r.toAck)), 1);
      figures[`${label}: provider answered → message.send read median ms`] = round(
        median(list.map((r) => r.answerToReply)),
        1,
      );
      figures[`${label}: waiting agent, anonymous memory median MiB`] = round(
        median(list.map((r) => r.idleMiB)),
        1,
      );
    }
    return figures;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url))
  printFigures(
    'agent: run.start → first LLM request, waiting as a pre-started container',
    await benchAgentStart(),
  );
