/**
 * MCP servers as host services, against the real reference servers from npm (no mocks): the trust
 * matrix, argument checks, the admin clean room and a crash, through the same policy code the host runs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { serviceToolName } from '../../../container-agent/src/tools/service-tools.ts';
import { configReferenceProblems } from '../../../host/config/config-references.ts';
import { hostConfigSchema, type HostConfig } from '../../../host/config/schema.ts';
import {
  assertStartableConfig,
  createHostServiceRegistry,
  serviceGrants,
} from '../../../host/config/service-grants.ts';
import { createCop } from '../../../host/security/cop/cop.ts';
import type { RunIdentity } from '../../../host/security/decisions.ts';
import type { HumanApproval } from '../../../host/security/policies/bash-policy.ts';
import { createMutationReview } from '../../../host/security/policies/mutation-review.ts';
import { createServicePolicy } from '../../../host/security/policies/service-policy.ts';
import { createSecretScanner } from '../../../host/security/secrets/index.ts';
import { createTaintRegistry, type Taint } from '../../../host/security/taint/taint.ts';
import { createToolCatalogue } from '../../../host/services/mcp/mcp-catalogue.ts';
import {
  createMcpServices,
  type McpServices,
  type McpServicesDeps,
} from '../../../host/services/mcp/mcp-services.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import {
  CLEAN_TRUST,
  doctorMcpServers,
  MEMORY_SERVER,
  memoryNotebook,
  startEverythingHttp,
} from '../../helpers/mcp-servers.ts';

const MEMORY = MEMORY_SERVER;
const ASKING = path.resolve('test/fixtures/mcp/asking-server.ts');
const HELD = 'sk-live-host-held-secret-0123456789';
const quiet = { info: () => undefined, warn: () => undefined };

let dir: string;
let everythingHttp: { url: string; stop(): void };
let everythingUrl: string;
const open: { mcp: McpServices; store: Store }[] = [];

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-mcp-'));
  everythingHttp = await startEverythingHttp();
  everythingUrl = everythingHttp.url;
});

afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.mcp.close();
    o.store.close();
  }
});

afterAll(() => {
  everythingHttp.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const group = (id: string, isAdmin = false) => ({
  id,
  channel: 'local',
  chatId: id,
  name: id,
  isAdmin,
  networkMode: 'gateway' as const,
  agentCursor: 0,
  createdAt: '',
  taint: { corruption: false, secret: false },
});

function recordingHuman(
  answer: boolean,
): HumanApproval & { asked: { operation: string; reason: string; params: unknown }[] } {
  const asked: { operation: string; reason: string; params: unknown }[] = [];
  return {
    asked,
    async ask(_identity, operation, reason, params) {
      asked.push({ operation, reason, params });
      return answer;
    },
  };
}

/** The host's service path for one run of `groupId`: config parsed by the real schema, the real policy. */
function host(opts: {
  config: Record<string, unknown>;
  groupId?: string;
  taint?: Taint;
  human?: boolean;
  copFlags?: boolean;
  logger?: McpServicesDeps['logger'];
}) {
  const config: HostConfig = hostConfigSchema.parse(opts.config);
  const redact = createSecretScanner({ heldSecrets: [HELD] }).redact;
  const store = openStore({ file: path.join(dir, `${Date.now()}-${Math.random()}.db`), redact });
  const registry = createHostServiceRegistry(() => config);
  const mcp = createMcpServices({
    services: () => config.services,
    secret: (name) =>
      name === 'MEMORY_FILE_PATH' ? path.join(dir, `memory-${Math.random()}.jsonl`) : undefined,
    logger: opts.logger ?? quiet,
    restart: { baseMs: 50, maxInARow: 3, coolDownMs: 60_000 },
  });
  open.push({ mcp, store });
  const taint = createTaintRegistry({
    initial: () => opts.taint ?? { corruption: false, secret: false },
    onTainted: () => undefined,
  });
  const copAsked: string[] = [];
  const cop = createCop({
    complete: async (messages) => {
      copAsked.push(messages.map((m) => m.content).join('\n'));
      return JSON.stringify({
        flagged: opts.copFlags ?? false,
        reason: opts.copFlags ? 'looks off' : 'fine',
      });
    },
  });
  const human = recordingHuman(opts.human ?? false);
  const scanner = createSecretScanner({ heldSecrets: [HELD] });
  const grantedTo = serviceGrants(() => config);
  const call = createServicePolicy({
    registry,
    servicesConfig: () => config.services,
    grantedTo,
    taint,
    cop,
    human,
    scanSecrets: (text) => scanner.scan(text),
    audit: store.audit,
    signalFor: () => AbortSignal.timeout(20_000),
    mcp,
    reviewMutation: createMutationReview({ cop, human, taint, audit: store.audit }),
  });
  const g = group(opts.groupId ?? 'family', opts.groupId === 'main');
  const identity: RunIdentity = { runId: 7, group: g, secretMounts: [] };
  return {
    config,
    mcp,
    human,
    copAsked,
    taint: () => taint.get(7),
    audit: () => store.audit.tail(50),
    call: (service: string, tool: string, args: unknown) => call(identity, service, args, tool),
    catalogue: () =>
      createToolCatalogue({
        mcp,
        services: () => config.services,
        builtinTrust: () => registry.builtinTrust(),
        logger: quiet,
      })(grantedTo(g)),
  };
}

/** server-everything over Streamable HTTP (not host-mutating), with the given trust and tool overrides. */
const remote = (trust: Record<string, unknown>, tools: Record<string, unknown> = {}) => ({
  services: { demo: { type: 'http', url: everythingUrl, ...trust, tools } },
  groups: { family: { services: ['demo'] } },
});
const clean = CLEAN_TRUST;

describe('MCP services under the trust matrix', () => {
  it('lists the tools of the group’s servers under names that say the service', async () => {
    const h = host({
      config: {
        services: {
          demo: { type: 'http', url: everythingUrl, ...clean },
          notebook: memoryNotebook(),
        },
        groups: { family: { services: ['demo', 'notebook'] } },
      },
    });
    const tools = await h.catalogue();
    const names = tools.map((t) => serviceToolName(t.service, t.tool));
    expect(names).toEqual(
      expect.arrayContaining([
        'demo__echo',
        'demo__get-sum',
        'notebook__create_entities',
        'notebook__read_graph',
      ]),
    );
    expect(tools.find((t) => t.tool === 'echo')?.inputSchema).toMatchObject({ type: 'object' });
    expect(h.mcp.status().map((s) => [s.name, s.state])).toEqual([
      ['demo', 'ready'],
      ['notebook', 'ready'],
    ]);
  });

  it('taints the run when it reads from a public-source service, and asks nobody', async () => {
    const h = host({ config: remote({ ...clean, public_source: true }) });
    const result = (await h.call('demo', 'echo', { message: 'hello' })) as {
      content: string;
      isError: boolean;
    };
    expect(result.content).toContain('hello');
    expect(result.content).toMatch(/^<<<UNTRUSTED TEXT from demo\.echo/);
    expect(h.taint()).toEqual({ corruption: true, secret: false });
    expect(h.human.asked).toEqual([]);
    expect(h.copAsked).toEqual([]);
    expect(h.audit().at(-1)).toMatchObject({ operation: 'service.demo.echo', decision: 'allowed' });
  });

  it('sends a write to a public sink in a corrupted run to the Cop, and a flag on to the owner', async () => {
    const passed = host({
      config: remote({ ...clean, public_sink: true }),
      taint: { corruption: true, secret: false },
    });
    await passed.call('demo', 'toggle-simulated-logging', {});
    expect(passed.copAsked).toHaveLength(1);
    expect(passed.human.asked).toEqual([]);

    const flagged = host({
      config: remote({ ...clean, public_sink: true }),
      taint: { corruption: true, secret: false },
      copFlags: true,
    });
    await expect(flagged.call('demo', 'toggle-simulated-logging', {})).rejects.toMatchObject({
      kind: 'denied',
    });
    expect(flagged.human.asked[0]?.reason).toMatch(/the Cop flagged it/);
  });

  it('asks the owner, not the Cop, for a public-sink write in a corrupted and secret run, showing service, tool and arguments', async () => {
    const h = host({
      config: remote({ ...clean, public_sink: true }),
      taint: { corruption: true, secret: true },
      human: true,
    });
    await h.call('demo', 'toggle-simulated-logging', {});
    expect(h.copAsked).toEqual([]);
    expect(h.human.asked).toEqual([
      {
        operation: 'service.demo.toggle-simulated-logging',
        reason: 'a run that read secrets and untrusted content wants to send data out',
        params: { service: 'demo', tool: 'toggle-simulated-logging', arguments: {} },
      },
    ]);
    expect(h.audit().at(-1)).toMatchObject({ decision: 'allowed', approver: 'owner' });
  });

  it('counts a tool the server marks read-only as a write to a declared public sink: its arguments leave, whatever the server claims', async () => {
    const record = 'Flat 3, 14 Elm Road: rent paid from the joint account on the 1st';
    const sink = host({
      config: remote({ ...clean, public_sink: true }),
      taint: { corruption: true, secret: true },
      human: true,
    });
    await sink.call('demo', 'echo', { message: record });
    expect(sink.human.asked).toEqual([
      {
        operation: 'service.demo.echo',
        reason: 'a run that read secrets and untrusted content wants to send data out',
        params: { service: 'demo', tool: 'echo', arguments: { message: record } },
      },
    ]);

    // Where the owner declared no sink, the server's readOnlyHint still makes it a read: nobody is asked.
    const notSink = host({ config: remote(clean), taint: { corruption: true, secret: true }, human: true });
    await notSink.call('demo', 'echo', { message: record });
    expect(notSink.human.asked).toEqual([]);
    // And the owner's own word for a tool outranks the sink: a tool declared a read is a read.
    const declared = host({
      config: remote({ ...clean, public_sink: true }, { echo: { kind: 'read' } }),
      taint: { corruption: true, secret: true },
      human: true,
    });
    await declared.call('demo', 'echo', { message: 'hello' });
    expect(declared.human.asked).toEqual([]);
  });

  it('refuses a forbidden tool without asking anyone, and does not offer it to the agent', async () => {
    const h = host({
      config: remote(clean, { 'toggle-simulated-logging': { public_sink: 'forbidden' } }),
      human: true,
    });
    await expect(h.call('demo', 'toggle-simulated-logging', {})).rejects.toMatchObject({ kind: 'denied' });
    expect(h.human.asked).toEqual([]);
    expect(h.copAsked).toEqual([]);
    expect((await h.catalogue()).map((t) => t.tool)).not.toContain('toggle-simulated-logging');
    expect(h.audit().at(-1)).toMatchObject({
      decision: 'denied',
      reason: expect.stringMatching(/forbidden/),
    });
  });

  it('always asks the owner before a dangerous write, even in a clean run', async () => {
    const h = host({ config: remote({ ...clean, dangerous_writes: true }), human: false });
    await expect(h.call('demo', 'toggle-simulated-logging', {})).rejects.toThrow(/not approved by the owner/);
    expect(h.human.asked[0]?.reason).toBe('demo.toggle-simulated-logging makes dangerous writes');
  });

  it('counts a read-only tool as a read, unless the owner calls it a write', async () => {
    const read = host({ config: remote({ ...clean, dangerous_writes: true }), human: false });
    await read.call('demo', 'echo', { message: 'x' });
    expect(read.human.asked).toEqual([]);
    const overridden = host({
      config: remote({ ...clean, dangerous_writes: true }, { echo: { kind: 'write' } }),
    });
    await expect(overridden.call('demo', 'echo', { message: 'x' })).rejects.toThrow(/dangerous writes/);
  });

  it('asks the owner when an argument carries a credential, whatever the taint', async () => {
    const h = host({ config: remote(clean), human: false });
    await expect(h.call('demo', 'echo', { message: `key ${HELD}` })).rejects.toMatchObject({
      kind: 'denied',
    });
    expect(h.human.asked[0]?.reason).toMatch(/the parameters contain a secret/);
    expect(JSON.stringify(h.audit())).not.toContain(HELD);
  });

  it('refuses arguments that do not match the tool’s input schema before anyone is asked', async () => {
    const h = host({ config: remote({ ...clean, dangerous_writes: true }) });
    await expect(h.call('demo', 'get-sum', { a: 'one', b: 2 })).rejects.toMatchObject({ kind: 'invalid' });
    await expect(h.call('demo', 'no-such-tool', {})).rejects.toThrow(/has no tool "no-such-tool"/);
    expect(h.human.asked).toEqual([]);
  });

  it('forbids a service not assigned to the group, and audits it', async () => {
    const h = host({ config: { ...remote(clean), groups: { family: { services: ['web_fetch'] } } } });
    await expect(h.call('demo', 'echo', { message: 'x' })).rejects.toMatchObject({ kind: 'forbidden' });
    expect(h.audit().at(-1)).toMatchObject({ operation: 'service.demo.echo', decision: 'denied' });
  });

  it('reviews every call to a stdio server with the Cop, since it runs code on the host', async () => {
    const h = host({
      config: {
        services: {
          notebook: memoryNotebook(),
        },
        groups: { family: { services: ['notebook'] } },
      },
    });
    await h.call('notebook', 'create_entities', {
      entities: [{ name: 'Oslo trip', entityType: 'plan', observations: ['leaves on 3 May'] }],
    });
    const read = (await h.call('notebook', 'search_nodes', { query: 'Oslo' })) as { content: string };
    expect(read.content).toContain('leaves on 3 May');
    expect(h.copAsked).toHaveLength(2);
    expect(h.audit().filter((r) => r.operation.endsWith('.cop'))).toHaveLength(2);
  });

  it('restarts a server that crashed, and the call it was running fails with a clear error rather than hanging', async () => {
    // The server says on stderr when the call reached it, and the host logs its stderr: the kill waits for
    // that line, so the call is surely running when the server dies.
    let reached: () => void = () => undefined;
    const callReached = new Promise<void>((resolve) => (reached = resolve));
    const h = host({
      config: {
        services: {
          demo: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', ASKING], ...clean },
        },
        groups: { main: { services: ['demo'] } },
      },
      groupId: 'main',
      logger: {
        info: (details) => {
          if ('stderr' in details && details.stderr === 'holding a call') reached();
        },
        warn: () => undefined,
      },
    });
    expect(await h.call('demo', 'ask-client', { what: 'roots' })).toMatchObject({ content: /refused/ });
    const pid = h.mcp.status()[0]?.pid;
    expect(pid).toBeTypeOf('number');
    const running = h.call('demo', 'hold', {});
    await callReached;
    process.kill(pid!, 'SIGKILL');
    await expect(running).rejects.toThrow(/demo stopped while running hold/);
    await vi.waitFor(() => expect(h.mcp.status()[0]).toMatchObject({ state: 'ready', restarts: 1 }), {
      timeout: 15_000,
      interval: 50,
    });
    expect(h.mcp.status()[0]?.pid).not.toBe(pid);
    expect(await h.call('demo', 'ask-client', { what: 'roots' })).toMatchObject({ content: /refused/ });
  });
});

describe('MCP server lifecycle', () => {
  it('times a call out after timeout_ms with an error that says so', async () => {
    const h = host({
      config: {
        services: { demo: { type: 'http', url: everythingUrl, timeout_ms: 300, ...clean } },
        groups: { family: { services: ['demo'] } },
      },
    });
    await expect(h.call('demo', 'trigger-long-running-operation', { duration: 5, steps: 5 })).rejects.toThrow(
      'demo.trigger-long-running-operation did not answer within 300 ms',
    );
    expect(h.audit().at(-1)).toMatchObject({ decision: 'failed' });
  });

  it('stops restarting a server that keeps failing, and says why at once until the cool-down', async () => {
    const h = host({
      config: {
        services: {
          flaky: { type: 'stdio', command: process.execPath, args: ['-e', 'process.exit(3)'], ...clean },
        },
        groups: { main: { services: ['flaky'] } },
      },
      groupId: 'main',
    });
    await expect(h.call('flaky', 'anything', {})).rejects.toThrow(/flaky could not be started/);
    await vi.waitFor(() => expect(h.mcp.status()[0]?.state).toBe('broken'), {
      timeout: 10_000,
      interval: 20,
    });
    await expect(h.call('flaky', 'anything', {})).rejects.toThrow(
      /flaky is not available: it failed 3 times in a row .* tries again in \d+ s/,
    );
  });
});

describe('what an MCP server may ask of the host', () => {
  const asking = () =>
    host({
      config: {
        services: {
          asking: {
            type: 'stdio',
            command: process.execPath,
            args: ['--import', 'tsx', ASKING],
            allow_non_admin: true,
            ...clean,
          },
        },
        groups: { family: { services: ['asking'] } },
      },
    });

  it('refuses a server’s sampling, elicitation and roots requests', async () => {
    const h = asking();
    for (const what of ['sampling', 'elicitation', 'roots']) {
      const result = (await h.call('asking', 'ask-client', { what })) as { content: string };
      expect(result.content).toMatch(/refused: .*Method not found/);
    }
  });

  it('lists a server’s tools again once it says they changed', async () => {
    const h = asking();
    expect((await h.catalogue()).map((t) => t.tool)).toEqual(['ask-client', 'add-tool', 'hold']);
    await h.call('asking', 'add-tool', {});
    await vi.waitFor(async () => expect((await h.catalogue()).map((t) => t.tool)).toContain('late'), {
      timeout: 10_000,
      interval: 50,
    });
  });
});

describe('MCP service declarations', () => {
  const registryFor = (config: HostConfig) => createHostServiceRegistry(() => config);

  it('refuses to start with a public-source service in the admin group, and config.propose refuses to add one', () => {
    const declared = {
      services: { demo: { type: 'http', url: 'https://mcp.example.com/mcp', public_source: true } },
    };
    const bad = hostConfigSchema.parse({ ...declared, groups: { main: { services: ['demo'] } } });
    expect(() => assertStartableConfig(bad, registryFor(bad), 'main')).toThrow(
      /admin group "main" is given demo/,
    );
    const before = hostConfigSchema.parse(declared);
    const problems = configReferenceProblems(before, bad, () => true, 'main');
    expect(problems.join('\n')).toMatch(/admin group "main" is given demo/);
  });

  it('counts a tool declared public-source as making its whole server public for the admin clean room', () => {
    const config = hostConfigSchema.parse({
      services: {
        demo: {
          type: 'http',
          url: 'https://mcp.example.com/mcp',
          ...clean,
          tools: { fetch: { public_source: true } },
        },
      },
      groups: { main: { services: ['demo'] } },
    });
    expect(() => assertStartableConfig(config, registryFor(config), 'main')).toThrow(/public content/);
  });

  it('gives a stdio server to another group only when the owner opts in', () => {
    const stdio = { type: 'stdio', command: 'node', ...clean };
    const without = hostConfigSchema.parse({
      services: { notes: stdio },
      groups: { family: { services: ['notes'] } },
    });
    expect(() => assertStartableConfig(without, registryFor(without), 'main')).toThrow(
      /allow_non_admin = true/,
    );
    const opted = hostConfigSchema.parse({
      services: { notes: { ...stdio, allow_non_admin: true } },
      groups: { family: { services: ['notes'] } },
    });
    expect(() => assertStartableConfig(opted, registryFor(opted), 'main')).not.toThrow();
  });

  it('refuses unknown service names and MCP servers under a built-in name', () => {
    const typo = hostConfigSchema.parse({ groups: { family: { services: ['notebok'] } } });
    expect(() => assertStartableConfig(typo, registryFor(typo), 'main')).toThrow(
      /there is no service "notebok"/,
    );
    const shadow = hostConfigSchema.parse({
      services: { web_fetch: { type: 'http', url: 'https://x.example/mcp' } },
    });
    expect(() => assertStartableConfig(shadow, registryFor(shadow), 'main')).toThrow(/built-in service/);
  });

  it('says which keys each type needs', () => {
    const problems = (services: unknown) =>
      hostConfigSchema.safeParse({ services }).error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    expect(problems({ a: { type: 'stdio' } })).toEqual([
      'services.a.command: a stdio server needs a command',
    ]);
    expect(problems({ a: { type: 'http', url: 'https://x.example/mcp', command: 'x' } })).toEqual([
      'services.a.command: only for type = "stdio"',
    ]);
    expect(problems({ a: { type: 'docker' } })).toEqual(['services.a.image: a docker server needs an image']);
    expect(problems({ a: { type: 'stdio', command: 'x', image: 'mcp/x' } })).toEqual([
      'services.a.image: only for type = "docker"',
    ]);
    expect(problems({ a: { type: 'docker', image: 'mcp/x', allow_non_admin: true } })).toEqual([
      'services.a.allow_non_admin: only for type = "stdio"',
    ]);
    expect(
      problems({
        a: {
          type: 'docker',
          image: '--privileged',
          mounts: [
            { host_path: 'relative/dir', container_path: '/data' },
            { host_path: '/srv/../etc', container_path: '/data' },
            { host_path: '/srv/notes', container_path: '/' },
          ],
          network: 'host',
        },
      }),
    ).toEqual([
      expect.stringMatching(/^services\.a\.image: must be a Docker image reference/),
      expect.stringMatching(/^services\.a\.mounts\.0\.host_path: host_path must be an absolute path/),
      expect.stringMatching(/^services\.a\.mounts\.1\.host_path: host_path must be an absolute path/),
      'services.a.mounts.2.container_path: container_path must not be "/"',
      'services.a.network: must be "none" or "egress"',
    ]);
    expect(problems({ a: { command: 'x' } })?.join()).toMatch(/set type = "stdio", "docker" or "http"/);
  });
});

describe('carapace doctor on MCP servers', () => {
  it('starts each declared server, counts its tools and names the one that cannot start', async () => {
    const configDir = path.join(dir, `doctor-${Math.random()}`);
    fs.mkdirSync(configDir);
    const result = await doctorMcpServers(configDir, [
      '[services.notebook]',
      'type = "stdio"',
      `command = ${JSON.stringify(process.execPath)}`,
      `args = [${JSON.stringify(MEMORY)}]`,
      '[services.broken]',
      'type = "stdio"',
      'command = "/nonexistent/mcp-server"',
    ]);
    expect(result.ok).toBe(false);
    expect(result.detail).toMatch(/broken unreachable: broken could not be started: .*ENOENT/);
    expect(result.detail).toContain('notebook (stdio) reachable, 9 tools');
  });
});
