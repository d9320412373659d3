/**
 * What the `bash.ran` report adds to a local command. The agent's bash tool runs `true` (a local
 * command) through the real classifier and bash, once with a host that hears every command (JSON-RPC
 * notification over stdio-like streams, the host's own classification and the audit row in SQLite, all
 * in this process, so the host's work competes for the same CPU) and once with a host that is told
 * nothing, alternating in the same run. Goal: the report adds < 2 ms to the p50.
 *
 *   node --import tsx scripts/bench/bench-bash-report.ts
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PassThrough } from 'node:stream';
import { createBashClassifier } from '../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../container-agent/src/bash-gate/wasm-files.ts';
import type { HostClient } from '../../container-agent/src/ipc/host-client.ts';
import { agentMethods, hostMethods } from '../../container-agent/src/protocol.ts';
import { createRpcPeer } from '../../container-agent/src/rpc/peer.ts';
import { commandEnvironment, createBashTool } from '../../container-agent/src/tools/bash.ts';
import { createHostHandlers } from '../../host/ipc/host-handlers.ts';
import { createBashLedger } from '../../host/security/bash-ledger.ts';
import { createBashReports } from '../../host/security/bash-reports.ts';
import { createSecretReads } from '../../host/security/secret-reads.ts';
import { createTaintRegistry } from '../../host/security/taint.ts';
import { openStore } from '../../host/store/store.ts';
import { idleTaskHandlers } from '../../test/helpers/idle-task-handlers.ts';
import { refusingConfigHandlers } from '../../test/helpers/refusing-config-handlers.ts';
import { isMain, percentile, printFigures, round } from './stats.ts';

const N = 300;
const WARMUP = 30;
const GOAL_ADDED_P50_MS = 2;

export async function benchBashReport(): Promise<Record<string, number | string>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-report-'));
  const store = openStore({ file: path.join(dir, 'carapace.db') });
  try {
    const group = store.groups.add({
      id: 'fam',
      channel: 'local',
      chatId: 'fam',
      name: 'fam',
      isAdmin: false,
    });
    const identity = { runId: 1, group, secretMounts: [] };
    const classifier = await createBashClassifier(resolveBashGateWasmPaths());
    const taint = createTaintRegistry({
      initial: () => ({ corruption: false, secret: false }),
      onTainted: () => undefined,
    });
    const bashRan = createBashReports({
      classifier,
      ledger: createBashLedger(),
      taint,
      audit: store.audit,
      secretReads: createSecretReads({ taint, audit: store.audit }),
    });
    let reports = 0;
    const handlers = createHostHandlers({
      identity,
      callbacks: { reply: async () => undefined, sendToGroup: async () => undefined },
      groups: store.groups,
      audit: store.audit,
      taint,
      config: refusingConfigHandlers,
      checkRegistration: () => undefined,
      onDone: () => undefined,
      bashCheck: async () => ({ decision: 'deny', reason: 'bench' }),
      fileRead: () => undefined,
      bashRan: (id, report) => {
        reports += 1;
        return bashRan(id, report);
      },
      stopRun: (reason) => {
        throw new Error(`the bench run was stopped: ${reason}`);
      },
      callService: async () => null,
      reviewMessage: async () => ({ allowed: true, reason: 'bench' }),
      reviewMutation: async () => ({ allowed: false, reason: 'bench' }),
      tasks: idleTaskHandlers(store, identity, async () => ({ allowed: false, reason: 'bench' })),
    });
    const toHost = new PassThrough();
    const toAgent = new PassThrough();
    createRpcPeer({
      input: toHost,
      output: toAgent,
      localMethods: hostMethods,
      remoteMethods: agentMethods,
      handlers,
    });
    const agent = createRpcPeer({
      input: toAgent,
      output: toHost,
      localMethods: agentMethods,
      remoteMethods: hostMethods,
      handlers: {
        'run.start': () => ({ accepted: true as const }),
        'run.input': () => ({ accepted: true }),
        'run.stop': () => undefined,
      },
    });
    const untold: HostClient = { request: agent.request, notify: () => undefined };
    const tool = (host: HostClient) =>
      createBashTool({
        classifier: Promise.resolve(classifier),
        host,
        cwd: dir,
        env: commandEnvironment(process.env, { timezone: 'UTC', home: dir }),
        onGateError: 'block',
        checkTimeoutMs: 1000,
        isolation: () => null,
      });
    const reported = tool(agent);
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
      const a = await time(silent);
      const b = await time(reported);
      if (i >= WARMUP) {
        without.push(a);
        withReport.push(b);
      }
    }
    // Let the host take in the last reports before counting them.
    await new Promise((r) => setTimeout(r, 50));
    agent.close();
    const base = percentile(without, 50);
    const withP50 = percentile(withReport, 50);
    const added = withP50 - base;
    return {
      'local command, host told nothing, p50 ms': round(base),
      'local command, reported to the host, p50 ms': round(withP50),
      'added by the report, p50 ms': round(added),
      'reported / untold p50': round(withP50 / base, 3),
      'goal: added p50 < 2 ms': added < GOAL_ADDED_P50_MS ? 'met' : 'MISSED',
      'reports audited': reports,
      commands: N,
    };
  } finally {
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) printFigures('bash.ran report on a local command', await benchBashReport());
