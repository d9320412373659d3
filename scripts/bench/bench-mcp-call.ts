/**
 * A service call to an MCP server, host overhead: the host's whole path (the group's grant, the tool
 * from the cached list, the arguments against its input schema, the secret scan, the trust matrix, the
 * audit row in SQLite, the taint, the call, the result cut and fenced) against the same tool called
 * directly with the SDK's client on a connection of its own. Both reach the same real server
 * (server-everything's `echo`, over Streamable HTTP on loopback), alternated call by call. The host's
 * overhead is measured per call: the whole path minus the time spent inside the server call itself
 * (transport and server), so load on the machine that slows the server does not count as the host's.
 * The difference of the two medians is printed beside it as a cross-check.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { hostConfigSchema } from '../../host/config/schema.ts';
import { createHostServiceRegistry, serviceGrants } from '../../host/config/service-grants.ts';
import { createCop } from '../../host/security/cop/cop.ts';
import { createServicePolicy } from '../../host/security/policies/service-policy.ts';
import { createSecretScanner } from '../../host/security/secrets/index.ts';
import { createTaintRegistry } from '../../host/security/taint/taint.ts';
import { createMcpServices, type McpServices } from '../../host/services/mcp/mcp-services.ts';
import { openStore } from '../../host/store/store.ts';
import { CLEAN_TRUST, startEverythingHttp } from '../../test/helpers/mcp-servers.ts';
import { isMain, median, percentile, printFigures, round } from './stats.ts';

const CALLS = 400;
const WARMUP = 40;

export async function benchMcpCall(): Promise<Record<string, number | string>> {
  const server = await startEverythingHttp();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-mcp-'));
  const store = openStore({ file: path.join(dir, 'carapace.db') });
  const { url } = server;
  const direct = new Client({ name: 'bench', version: '1' }, { capabilities: {} });
  const config = hostConfigSchema.parse({
    services: {
      demo: { type: 'http', url, ...CLEAN_TRUST },
    },
    groups: { family: { services: ['demo'] } },
  });
  const servers = createMcpServices({
    services: () => config.services,
    secret: () => undefined,
    logger: { info: () => undefined, warn: () => undefined },
  });
  // The same servers, with the time inside each tool call recorded.
  let inServer = 0;
  const mcp: McpServices = {
    ...servers,
    connection(name) {
      const connection = servers.connection(name);
      return (
        connection && {
          ...connection,
          async call(tool, args, signal) {
            const t = performance.now();
            try {
              return await connection.call(tool, args, signal);
            } finally {
              inServer = performance.now() - t;
            }
          },
        }
      );
    },
  };
  try {
    await direct.connect(new StreamableHTTPClientTransport(new URL(url)));
    const scanner = createSecretScanner({ heldSecrets: [] });
    const call = createServicePolicy({
      registry: createHostServiceRegistry(() => config),
      servicesConfig: () => config.services,
      grantedTo: serviceGrants(() => config),
      taint: createTaintRegistry({
        initial: () => ({ corruption: false, secret: false }),
        onTainted: () => undefined,
      }),
      cop: createCop({ complete: async () => '{"flagged":true,"reason":"not expected"}' }),
      human: { ask: async () => false },
      scanSecrets: (text) => scanner.scan(text),
      audit: store.audit,
      signalFor: () => AbortSignal.timeout(10_000),
      mcp,
    });
    const identity = {
      runId: 1,
      group: {
        id: 'family',
        channel: 'local',
        chatId: 'family',
        name: 'family',
        isAdmin: false,
        networkMode: 'gateway' as const,
        agentCursor: 0,
        createdAt: '',
        taint: { corruption: false, secret: false },
      },
      secretMounts: [],
    };
    const args = { message: 'what is on the calendar for Tuesday?' };
    const viaHost: number[] = [];
    const hostOnly: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < WARMUP + CALLS; i++) {
      let t = performance.now();
      await call(identity, 'demo', args, 'echo');
      const host = performance.now() - t;
      t = performance.now();
      await direct.callTool({ name: 'echo', arguments: args });
      const plain = performance.now() - t;
      if (i >= WARMUP) {
        viaHost.push(host);
        hostOnly.push(host - inServer);
        bare.push(plain);
      }
    }
    const overhead = median(hostOnly);
    return {
      calls: CALLS,
      'direct SDK call p50 ms (the server’s own time)': round(median(bare)),
      'through the host p50 ms': round(median(viaHost)),
      'through the host p95 ms': round(percentile(viaHost, 95)),
      'host overhead per call (whole path minus server call) p50 ms': round(overhead),
      'host overhead per call p95 ms': round(percentile(hostOnly, 95)),
      'difference of the medians ms (cross-check)': round(median(viaHost) - median(bare)),
      'ratio host / direct (p50)': round(median(viaHost) / median(bare), 2),
      'target overhead p50 < 2 ms': overhead < 2 ? 'met' : 'MISSED',
    };
  } finally {
    await direct.close().catch(() => undefined);
    await servers.close();
    store.close();
    server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) printFigures('MCP service call, host overhead', await benchMcpCall());
