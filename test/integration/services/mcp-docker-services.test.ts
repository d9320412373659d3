/**
 * `type = "docker"` MCP servers through real Docker: the memory server from the project's node_modules
 * (mounted read-only, the one listed mount) run by node in the agent image, no registry needed.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { AGENT_USER } from '../../../host/containers/image/image-base-offline.ts';
import {
  defaultBridgeAddress,
  gatewayHostAddress,
} from '../../../host/containers/network/network-gateway.ts';
import { LABEL_HOST } from '../../../host/containers/run/container-spec.ts';
import { LABEL_DATA_DIR } from '../../../host/containers/run/docker-leftovers.ts';
import { createMcpServerContainers } from '../../../host/containers/run/mcp-server-container.ts';
import { execLines } from '../../../host/containers/image/image-exec.ts';
import { createMcpServices, type McpServices } from '../../../host/services/mcp/mcp-services.ts';
import { servicesConfigSchema } from '../../../host/services/service-trust.ts';
import { agentImageTag } from '../../helpers/agent-image.ts';
import { describeDocker } from '../../helpers/docker-available.ts';
import { CLEAN_TRUST, doctorMcpServers, MEMORY_SERVER } from '../../helpers/mcp-servers.ts';

const NODE_MODULES = path.resolve('node_modules');
const IN_CONTAINER = '/srv/node_modules';
const SERVER_IN_CONTAINER = `${IN_CONTAINER}/${path.relative(NODE_MODULES, MEMORY_SERVER)}`;
const docker = new Docker();
const quiet = { info: () => undefined, warn: () => undefined };

let image = '';
let dir: string;
const open: McpServices[] = [];

/** The memory server as a docker service, in the agent image, its package mounted read-only. */
const notebook = (extra: Record<string, unknown> = {}) => ({
  type: 'docker',
  image,
  command: 'node',
  args: [SERVER_IN_CONTAINER],
  env: ['MEMORY_FILE_PATH'],
  mounts: [{ host_path: NODE_MODULES, container_path: IN_CONTAINER }],
  ...CLEAN_TRUST,
  ...extra,
});

function services(declared: Record<string, unknown>, hostInstanceId: string): McpServices {
  const dataDir = fs.mkdtempSync(path.join(dir, 'data-'));
  const mcp = createMcpServices({
    services: () => servicesConfigSchema.parse(declared),
    secret: (name) => (name === 'MEMORY_FILE_PATH' ? '/tmp/memory.jsonl' : undefined),
    logger: quiet,
    restart: { baseMs: 50, maxInARow: 3, coolDownMs: 60_000 },
    containers: createMcpServerContainers({
      docker,
      hostInstanceId,
      dataDir,
      configDir: path.join(dir, 'config'),
    }),
  });
  open.push(mcp);
  return mcp;
}

const ourContainers = (hostInstanceId: string) =>
  docker.listContainers({ all: true, filters: { label: [`${LABEL_HOST}=${hostInstanceId}`] } });

/** What a script run by node inside the container prints. */
async function inContainer(container: string, script: string): Promise<string> {
  const lines: string[] = [];
  const result = await execLines('docker', ['exec', container, 'node', '-e', script], {
    onLine: (line) => lines.push(line),
  });
  expect(result.code, lines.join('\n')).toBe(0);
  return lines.join('\n');
}

/** Connects to host:port from inside the container; prints "connected" or the error code. */
const connectScript = (host: string, port: number) =>
  `const s = require('net').connect({ host: ${JSON.stringify(host)}, port: ${port}, timeout: 3000 });` +
  `s.on('connect', () => { console.log('connected'); s.destroy(); });` +
  `s.on('timeout', () => { console.log('timeout'); s.destroy(); });` +
  `s.on('error', (e) => console.log(e.code));`;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-mcp-docker-'));
  fs.mkdirSync(path.join(dir, 'config'));
});

afterEach(async () => {
  for (const mcp of open.splice(0)) await mcp.close();
});

afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

await describeDocker('MCP servers in containers (type = "docker")', () => {
  beforeAll(async () => {
    image = await agentImageTag(docker, path.resolve('.'));
  }, 600_000);

  it('lists the tools of a server in its own container and calls one', async () => {
    const mcp = services({ notebook: notebook() }, `test-${process.pid}-tools`);
    const tools = await mcp.connection('notebook')!.tools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['create_entities', 'read_graph']));
    const signal = new AbortController().signal;
    await mcp
      .connection('notebook')!
      .call(
        'create_entities',
        { entities: [{ name: 'Ada', entityType: 'person', observations: ['likes tea'] }] },
        signal,
      );
    const graph = await mcp.connection('notebook')!.call('read_graph', {}, signal);
    expect(JSON.stringify(graph.content)).toContain('likes tea');
    expect(mcp.status()).toEqual([
      expect.objectContaining({ name: 'notebook', type: 'docker', state: 'ready', tools: tools.length }),
    ]);
  });

  it('runs the container hardened, with only the listed mount (read-only) and no network but loopback', async () => {
    const hostInstanceId = `test-${process.pid}-hardened`;
    const mcp = services({ notebook: notebook() }, hostInstanceId);
    await mcp.connection('notebook')!.start();
    const name = mcp.status()[0]!.container!;
    const info = await docker.getContainer(name).inspect();
    expect(info.Mounts.map((m) => ({ source: m.Source, target: m.Destination, rw: m.RW }))).toEqual([
      { source: fs.realpathSync(NODE_MODULES), target: IN_CONTAINER, rw: false },
    ]);
    expect(info.HostConfig.CapDrop).toEqual(['ALL']);
    // Not even the three the agent's launcher gets: the server is no launcher.
    expect(info.HostConfig.CapAdd ?? []).toEqual([]);
    expect(info.HostConfig.Init).toBe(true);
    expect(info.HostConfig.SecurityOpt).toEqual(['no-new-privileges']);
    expect(info.HostConfig.ReadonlyRootfs).toBe(true);
    expect(info.HostConfig.PidsLimit).toBeGreaterThan(0);
    expect(info.HostConfig.Memory).toBe(512 * 1024 * 1024);
    expect(info.Config.User).toBe(AGENT_USER);
    expect(info.HostConfig.NetworkMode).toBe('none');
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual(['none']);
    expect(info.Config.Labels[LABEL_DATA_DIR]).toBeTruthy();

    const interfaces = await inContainer(
      name,
      'console.log(Object.keys(require("os").networkInterfaces()).join())',
    );
    expect(interfaces).toBe('lo');
    const hostAddress = await defaultBridgeAddress(docker);
    expect(await inContainer(name, connectScript(hostAddress, 22))).toBe('ENETUNREACH');
  });

  it('puts an "egress" server on a network of its own from which the host is closed', async () => {
    // A listener on every host address: without the firewall the container would reach it.
    const listener = net.createServer((socket) => socket.end());
    await new Promise<void>((done) => listener.listen(0, '0.0.0.0', done));
    const { port } = listener.address() as net.AddressInfo;
    try {
      const hostInstanceId = `test-${process.pid}-egress`;
      const mcp = services({ notebook: notebook({ network: 'egress' }) }, hostInstanceId);
      await mcp.connection('notebook')!.start();
      const name = mcp.status()[0]!.container!;
      const info = await docker.getContainer(name).inspect();
      const networks = Object.keys(info.NetworkSettings.Networks);
      expect(networks).toHaveLength(1);
      const network = networks[0]!;
      expect(network).toMatch(/^carapace-mcp-notebook-/);
      const netInfo = (await docker.getNetwork(network).inspect()) as {
        Internal: boolean;
        Containers: Record<string, unknown>;
      };
      expect(netInfo.Internal).toBe(false);
      expect(Object.keys(netInfo.Containers)).toEqual([info.Id]);
      const hostOnNetwork = await gatewayHostAddress(docker, network);
      expect(await inContainer(name, connectScript(hostOnNetwork, port))).toMatch(
        /^(ECONNREFUSED|EHOSTUNREACH)$/,
      );

      await mcp.close();
      expect(await ourContainers(hostInstanceId)).toEqual([]);
      await expect(docker.getNetwork(network).inspect()).rejects.toThrow(/not found/i);
    } finally {
      listener.close();
    }
  });

  it('starts a new container for the next call after the server container was killed', async () => {
    const mcp = services({ notebook: notebook() }, `test-${process.pid}-restart`);
    const connection = mcp.connection('notebook')!;
    await connection.start();
    const first = connection.status().container!;
    await docker.getContainer(first).kill();
    await vi.waitFor(() => expect(connection.status().container).not.toBe(first), { timeout: 20_000 });
    const graph = await connection.call('read_graph', {}, new AbortController().signal);
    expect(graph.isError).toBeFalsy();
    expect(connection.status().container).not.toBe(first);
    expect(connection.status().restarts).toBeGreaterThanOrEqual(1);
  });

  it('leaves no container behind once the host closes its servers', async () => {
    const hostInstanceId = `test-${process.pid}-close`;
    const mcp = services({ notebook: notebook(), second: notebook() }, hostInstanceId);
    await Promise.all([mcp.connection('notebook')!.start(), mcp.connection('second')!.start()]);
    expect(await ourContainers(hostInstanceId)).toHaveLength(2);
    await mcp.close();
    expect(await ourContainers(hostInstanceId)).toEqual([]);
  });

  it("refuses a mount of a credential folder or of the host's own folders before starting anything", async () => {
    const secrets = path.join(dir, '.ssh');
    fs.mkdirSync(secrets, { recursive: true });
    const hostInstanceId = `test-${process.pid}-mounts`;
    const mcp = services(
      { keys: notebook({ mounts: [{ host_path: secrets, container_path: '/keys' }] }) },
      hostInstanceId,
    );
    await expect(mcp.connection('keys')!.start()).rejects.toThrow(/looks like it holds credentials/);
    const own = services(
      { own: notebook({ mounts: [{ host_path: path.join(dir, 'config'), container_path: '/cfg' }] }) },
      hostInstanceId,
    );
    await expect(own.connection('own')!.start()).rejects.toThrow(/overlaps Carapace's own folder/);
    expect(await ourContainers(hostInstanceId)).toEqual([]);
  });

  it('shows in doctor with its tool count', async () => {
    const configDir = fs.mkdtempSync(path.join(dir, 'doctor-'));
    const result = await doctorMcpServers(configDir, [
      '[services.notebook]',
      'type = "docker"',
      `image = ${JSON.stringify(image)}`,
      'command = "node"',
      `args = [${JSON.stringify(SERVER_IN_CONTAINER)}]`,
      `mounts = [{ host_path = ${JSON.stringify(NODE_MODULES)}, container_path = "${IN_CONTAINER}" }]`,
    ]);
    expect(result.detail).toBe('notebook (docker) reachable, 9 tools');
    expect(result.ok).toBe(true);
  });
});
