/**
 * The host side of the `bash.ran` benchmark, in its own process (forked by bench-bash-report.ts) as in
 * production, where the host and the agent's commands never share an event loop: JSON-RPC over this
 * process's stdin/stdout (a container's attached stdio in production), the host's own classification and
 * the audit row in SQLite. Over the IPC channel it answers `count` with the reports audited so far and
 * ends on `close`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { createBashClassifier } from '../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../container-agent/src/bash-gate/wasm-files.ts';
import { agentMethods, hostMethods } from '../../container-agent/src/protocol.ts';
import { createRpcPeer } from '../../container-agent/src/rpc/peer.ts';
import { createHostHandlers } from '../../host/ipc/host-handlers.ts';
import { createBashLedger } from '../../host/security/policies/bash-ledger.ts';
import { createBashReports } from '../../host/security/taint/bash-reports.ts';
import { createSecretReads } from '../../host/security/taint/secret-reads.ts';
import { createTaintRegistry } from '../../host/security/taint/taint.ts';
import { openStore } from '../../host/store/store.ts';
import { idleTaskHandlers } from '../../test/helpers/idle-task-handlers.ts';
import { refusingConfigHandlers } from '../../test/helpers/refusing-config-handlers.ts';
import { percentile } from './stats.ts';

export const hostCommandSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('count') }).strict(),
  z.object({ op: z.literal('close') }).strict(),
]);
export type HostCommand = z.infer<typeof hostCommandSchema>;

export const hostEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }).strict(),
  z
    .object({
      type: z.literal('count'),
      audited: z.number().int(),
      /** The host's own work per report (re-classifying and auditing it), p50. */
      handleP50Ms: z.number(),
    })
    .strict(),
]);
export type HostEvent = z.infer<typeof hostEventSchema>;

const send = (event: HostEvent): void => {
  process.send?.(event);
};

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-report-'));
const store = openStore({ file: path.join(dir, 'carapace.db') });
const group = store.groups.add({ id: 'fam', channel: 'local', chatId: 'fam', name: 'fam', isAdmin: false });
const identity = { runId: 1, group, secretMounts: [] };
const classifier = await createBashClassifier(resolveBashGateWasmPaths());
const taint = createTaintRegistry({
  initial: () => ({ corruption: false, secret: false }),
  onTainted: () => undefined,
});
const handleMs: number[] = [];
const bashRan = createBashReports({
  classifier,
  ledger: createBashLedger(),
  taint,
  audit: store.audit,
  secretReads: createSecretReads({ taint, audit: store.audit }),
});
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
    const started = performance.now();
    try {
      return bashRan(id, report);
    } finally {
      handleMs.push(performance.now() - started);
    }
  },
  stopRun: (reason) => {
    process.stderr.write(`the bench run was stopped: ${reason}\n`);
    process.exit(1);
  },
  callService: async () => null,
  reviewMessage: async () => ({ allowed: true, reason: 'bench' }),
  reviewMutation: async () => ({ allowed: false, reason: 'bench' }),
  tasks: idleTaskHandlers(store, identity, async () => ({ allowed: false, reason: 'bench' })),
});
const peer = createRpcPeer({
  input: process.stdin,
  output: process.stdout,
  localMethods: hostMethods,
  remoteMethods: agentMethods,
  handlers,
});
process.on('message', (raw) => {
  const command = hostCommandSchema.parse(raw);
  if (command.op === 'count') {
    send({
      type: 'count',
      audited: store.audit.tail(100_000).filter((r) => r.operation === 'bash.ran').length,
      handleP50Ms: percentile(handleMs, 50),
    });
    return;
  }
  peer.close();
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
  process.disconnect();
  process.exit(0);
});
send({ type: 'ready' });
