/**
 * A `security.bash_check` round trip as the agent makes it: JSON-RPC request over stdio-like streams,
 * the host's handlers, the host's own classification, the taint policy and the audit row in SQLite,
 * and the answer back; for an untainted run (decided without the Cop). The baseline is a round trip of
 * a trivial method (`group.list` of the admin group) over the same streams in the same run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PassThrough } from 'node:stream';
import { createBashClassifier } from '../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../container-agent/src/bash-gate/wasm-files.ts';
import { agentMethods, hostMethods } from '../../container-agent/src/protocol.ts';
import { createRpcPeer } from '../../container-agent/src/rpc/peer.ts';
import { createHostHandlers } from '../../host/ipc/host-handlers.ts';
import { createBashPolicy } from '../../host/security/policies/bash-policy.ts';
import { createCop } from '../../host/security/cop/cop.ts';
import { createSecretScanner } from '../../host/security/secrets/index.ts';
import { createTaintRegistry } from '../../host/security/taint/taint.ts';
import { openStore } from '../../host/store/store.ts';
import { idleTaskHandlers } from '../../test/helpers/idle-task-handlers.ts';
import { refusingConfigHandlers } from '../../test/helpers/refusing-config-handlers.ts';
import { idleAgentPeer } from '../../test/helpers/idle-agent-peer.ts';
import { isMain, percentile, printFigures, round } from './stats.ts';

const N = 2000;

export async function benchBashCheck(): Promise<Record<string, number | string>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-check-'));
  const store = openStore({ file: path.join(dir, 'carapace.db') });
  try {
    const group = store.groups.add({
      id: 'main',
      channel: 'local',
      chatId: 'main',
      name: 'main',
      isAdmin: true,
    });
    const classifier = await createBashClassifier(resolveBashGateWasmPaths());
    const scanner = createSecretScanner({ heldSecrets: ['sk-bench-held-secret-0123456789'] });
    const taint = createTaintRegistry({
      initial: () => ({ corruption: false, secret: false }),
      onTainted: () => undefined,
    });
    const policy = createBashPolicy({
      classifier,
      taint,
      cop: createCop({ complete: async () => '{"flagged":true,"reason":"not reached"}' }),
      human: { ask: async () => false },
      scanSecrets: (t) => scanner.scan(t),
      audit: store.audit,
    });
    // Each request counts as a fresh run, so every one is decided with no taint (an allowed network
    // command taints its run, which would send the next request to the Cop).
    let runId = 0;
    const handlers = createHostHandlers({
      identity: { runId: 1, group, secretMounts: [] },
      callbacks: { reply: async () => undefined, sendToGroup: async () => undefined },
      groups: store.groups,
      audit: store.audit,
      onDone: () => undefined,
      checkRegistration: () => undefined,
      bashCheck: (identity, command) => policy({ ...identity, runId: ++runId }, command),
      bashRan: () => ({ missed: false }),
      fileRead: () => undefined,
      stopRun: () => undefined,
      callService: async () => null,
      reviewMessage: async () => ({ allowed: true, reason: 'bench' }),
      reviewMutation: async () => ({ allowed: false, reason: 'bench' }),
      tasks: idleTaskHandlers(store, { runId: 1, group, secretMounts: [] }, async () => ({
        allowed: false,
        reason: 'bench',
      })),
      taint: { markCorrupted: () => undefined },
      config: refusingConfigHandlers,
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
    const agent = idleAgentPeer(toAgent, toHost);

    const commands = ['curl -s https://example.org', 'git status', 'make build', 'python3 -c "print(1)"'];
    const check: number[] = [];
    const baseline: number[] = [];
    for (let i = 0; i < N + 200; i++) {
      let t = performance.now();
      await agent.request('group.list', {});
      const b = performance.now() - t;
      t = performance.now();
      const r = await agent.request('security.bash_check', {
        command: commands[i % commands.length] as string,
        localReason: 'bench',
      });
      const c = performance.now() - t;
      if (r.decision !== 'allow')
        throw new Error(`expected allow for an untainted run, got ${r.decision}: ${r.reason}`);
      if (i >= 200) {
        baseline.push(b);
        check.push(c);
      }
    }
    agent.close();
    const b50 = percentile(baseline, 50);
    return {
      'rpc round trip (group.list) p50 ms': round(b50),
      'security.bash_check, no taint, p50 ms': round(percentile(check, 50)),
      'security.bash_check, no taint, p99 ms': round(percentile(check, 99)),
      'bash_check p50 / rpc p50': round(percentile(check, 50) / b50, 1),
      requests: N,
    };
  } finally {
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) printFigures('security.bash_check round trip', await benchBashCheck());
