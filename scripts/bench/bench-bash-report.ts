/**
 * What the `bash.ran` report adds to a local command. The agent's bash tool runs `true` (a local
 * command) through the real classifier and bash, once reporting it to a host and once telling nobody,
 * alternating in the same run. The host runs in its own process as in production (JSON-RPC over its
 * stdin/stdout, its own classification and the audit row in SQLite: bench-bash-report-host.ts), so the
 * figure is what the agent pays: serializing and writing the notification. Goal: the report adds
 * < 2 ms to the p50.
 *
 *   node --import tsx scripts/bench/bench-bash-report.ts
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import type { Readable, Writable } from 'node:stream';
import { createBashClassifier } from '../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../container-agent/src/bash-gate/wasm-files.ts';
import type { HostClient } from '../../container-agent/src/ipc/host-client.ts';
import { commandEnvironment, createBashTool } from '../../container-agent/src/tools/bash.ts';
import { hostEventSchema, type HostCommand, type HostEvent } from './bench-bash-report-host.ts';
import { idleAgentPeer } from '../../test/helpers/idle-agent-peer.ts';
import { isMain, percentile, printFigures, round } from './stats.ts';
import { inProcessCommands } from '../../test/helpers/in-process-commands.ts';

const N = 300;
const WARMUP = 30;
const GOAL_ADDED_P50_MS = 2;
const HERE = path.dirname(fileURLToPath(import.meta.url));

/** The next message from the host process that satisfies `want`. */
function nextEvent<T extends HostEvent>(host: ChildProcess, want: (e: HostEvent) => e is T): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (raw: unknown) => {
      const event = hostEventSchema.parse(raw);
      if (!want(event)) return;
      host.off('message', onMessage);
      host.off('exit', onExit);
      resolve(event);
    };
    const onExit = (code: number | null) => reject(new Error(`the bench host exited (code ${code})`));
    host.on('message', onMessage);
    host.on('exit', onExit);
  });
}

export async function benchBashReport(): Promise<Record<string, number | string>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-report-cwd-'));
  const host = fork(path.join(HERE, 'bench-bash-report-host.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['pipe', 'pipe', 'inherit', 'ipc'],
  });
  const command = (c: HostCommand) => host.send(c);
  try {
    await nextEvent(host, (e): e is Extract<HostEvent, { type: 'ready' }> => e.type === 'ready');
    const classifier = await createBashClassifier(resolveBashGateWasmPaths());
    const agent = idleAgentPeer(host.stdout as Readable, host.stdin as Writable);
    const untold: HostClient = { request: agent.request, notify: () => undefined };
    const tool = (client: HostClient) =>
      createBashTool({
        classifier: Promise.resolve(classifier),
        host: client,
        cwd: dir,
        env: commandEnvironment(process.env, { timezone: 'UTC', home: dir }),
        checkTimeoutMs: 1000,
        commands: inProcessCommands,
      });
    // What the agent itself spends on each report (validating, serializing, writing the frame).
    const notifyMs: number[] = [];
    const timedNotify: HostClient = {
      request: agent.request,
      notify: (method, params) => {
        const started = performance.now();
        agent.notify(method, params);
        notifyMs.push(performance.now() - started);
      },
    };
    const reported = tool(timedNotify);
    const silent = tool(untold);
    const signal = new AbortController().signal;
    const time = async (t: ReturnType<typeof tool>) => {
      const started = performance.now();
      const out = await t.run({ command: 'true' }, { signal });
      if (out !== 'exit code 0') throw new Error(`unexpected result: ${out}`);
      return performance.now() - started;
    };
    const withReport: number[] = [];
    const without: number[] = [];
    for (let i = 0; i < N + WARMUP; i++) {
      // Alternating which goes first cancels what the previous command leaves behind (the host's work).
      const first = i % 2 === 0 ? silent : reported;
      const x = await time(first);
      const y = await time(first === silent ? reported : silent);
      const [a, b] = first === silent ? [x, y] : [y, x];
      if (i >= WARMUP) {
        without.push(a);
        withReport.push(b);
      }
    }
    // Every report reached the host and was audited there (the count waits behind them on no stream, so poll).
    let audited = 0;
    let hostHandleP50 = Number.NaN;
    for (let tries = 0; tries < 50 && audited < N + WARMUP; tries++) {
      const counted = nextEvent(host, (e): e is Extract<HostEvent, { type: 'count' }> => e.type === 'count');
      command({ op: 'count' });
      ({ audited, handleP50Ms: hostHandleP50 } = await counted);
      if (audited < N + WARMUP) await new Promise((r) => setTimeout(r, 100));
    }
    agent.close();
    const base = percentile(without, 50);
    const withP50 = percentile(withReport, 50);
    const added = withP50 - base;
    return {
      'local command, host told nothing, p50 ms': round(base),
      'local command, reported to the host, p50 ms': round(withP50),
      'added by the report, p50 ms': round(added),
      // Pairs ran back to back: their differences cancel slow drifts in the machine's load.
      'added by the report, median of paired differences ms': round(
        percentile(
          withReport.map((b, i) => b - (without[i] as number)),
          50,
        ),
      ),
      'reported / untold p50': round(withP50 / base, 3),
      'the notify call in the agent, p50 ms': round(percentile(notifyMs.slice(WARMUP), 50), 4),
      "the host's handling of one report, p50 ms": round(hostHandleP50, 4),
      'goal: added p50 < 2 ms': added < GOAL_ADDED_P50_MS ? 'met' : 'MISSED',
      'reports audited by the host': audited,
      commands: N,
    };
  } finally {
    if (host.exitCode === null && host.connected) {
      const exited = once(host, 'exit');
      command({ op: 'close' });
      const timer = setTimeout(() => host.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) printFigures('bash.ran report on a local command', await benchBashReport());
