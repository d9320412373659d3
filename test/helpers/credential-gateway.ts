import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hostConfigSchema, type HostConfig } from '../../host/config/schema.ts';
import {
  createGateway,
  gatewayConfigSchema,
  providerConfigSchema,
  type Gateway,
  type RunKeys,
} from '../../host/gateway/index.ts';
import { createCop } from '../../host/security/cop/cop.ts';
import { createCredentialPolicy } from '../../host/security/policies/credential-policy.ts';
import { createSecretScanner } from '../../host/security/secrets/index.ts';
import { createTaintRegistry, type Taint } from '../../host/security/taint/taint.ts';
import type { AuditRow } from '../../host/store/audit-store.ts';
import { openStore, type Store } from '../../host/store/store.ts';
import { createMemoryUsageStore } from '../fakes/memory-usage-store.ts';
import { systemClock } from '../../host/time/clock.ts';

export interface Asked {
  operation: string;
  reason: string;
  params: Record<string, unknown>;
}

export interface CredentialGateway {
  gateway: Gateway;
  store: Store;
  /** The credential routes' base URL on loopback, e.g. http://127.0.0.1:1234/credentials. */
  url: string;
  port: number;
  /** Starts a run of `groupId` with its keys (the runs table holds it, as the host's would). */
  startRun(groupId?: string, taint?: Taint): { runId: number; keys: RunKeys };
  taintOf(runId: number): Taint;
  asked: Asked[];
  copAsked: string[];
  audit(): AuditRow[];
  close(): Promise<void>;
}

const quiet = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/**
 * The gateway with its credential routes, wired as the host wires them: the real credential policy on the
 * real trust matrix, the real secret scanner (holding the credentials' values), the real audit log in
 * SQLite. Only the owner's answer and the Cop's verdict are scripted.
 */
export async function startCredentialGateway(opts: {
  config: Record<string, unknown>;
  secrets: Record<string, string>;
  owner?: (ask: Asked) => boolean;
  copFlags?: boolean;
  address?: string;
}): Promise<CredentialGateway> {
  const config: HostConfig = hostConfigSchema.parse(opts.config);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-cred-'));
  const scanner = createSecretScanner({ heldSecrets: Object.values(opts.secrets) });
  const store = openStore({ file: path.join(dir, 'carapace.db'), redact: scanner.redact });
  const standing = new Map<number, Taint>();
  const taint = createTaintRegistry({
    initial: (runId) => standing.get(runId) ?? { corruption: false, secret: false },
    onTainted: () => undefined,
  });
  const asked: Asked[] = [];
  const copAsked: string[] = [];
  const ended = new Map<number, AbortController>();
  const policy = createCredentialPolicy({
    taint,
    audit: store.audit,
    cop: createCop({
      complete: async (messages) => {
        copAsked.push(messages.map((m) => m.content).join('\n'));
        return JSON.stringify({
          flagged: opts.copFlags ?? false,
          reason: opts.copFlags ? 'looks off' : 'fine',
        });
      },
    }),
    human: {
      async ask(_identity, operation, reason, params) {
        const ask = { operation, reason, params };
        asked.push(ask);
        return opts.owner?.(ask) ?? false;
      },
    },
    scanSecrets: async (text) => scanner.scan(text),
    identityOf: (owner) => {
      const group = store.groups.get(owner.groupId);
      return group ? { runId: Number(owner.runId), group, secretMounts: [] } : undefined;
    },
  });
  const gateway = createGateway({
    config: () => gatewayConfigSchema.parse({}),
    provider: providerConfigSchema.parse({ base_url: 'http://127.0.0.1:9/v1', model: 'm' }),
    providerApiKey: '',
    usageStore: createMemoryUsageStore(),
    clock: systemClock,
    timezone: () => 'UTC',
    logger: quiet,
    maxOutputTokens: 4096,
    credentials: {
      credentials: () => config.credentials,
      grantedTo: (groupId) => config.groups[groupId]?.credentials ?? [],
      secret: (name) => opts.secrets[name],
      gate: (owner, use) => policy.gate(owner, use),
      record: (owner, row) => policy.record(owner, row),
      signalFor: (owner) => (ended.get(Number(owner.runId)) ?? new AbortController()).signal,
    },
  });
  const address = opts.address ?? '127.0.0.1';
  const { port } = await gateway.listen([address]);
  return {
    gateway,
    store,
    url: gateway.credentialsUrlFor(address),
    port,
    startRun(groupId = 'family', initial) {
      if (!store.groups.get(groupId))
        store.groups.add({ id: groupId, channel: 'local', chatId: groupId, name: groupId, isAdmin: false });
      const runId = store.runs.start(groupId, 1, 0).id;
      if (initial) standing.set(runId, initial);
      ended.set(runId, new AbortController());
      return { runId, keys: gateway.issueKey({ runId: String(runId), groupId }) };
    },
    taintOf: (runId) => taint.get(runId),
    asked,
    copAsked,
    audit: () => store.audit.tail(1000),
    async close() {
      await gateway.close();
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
