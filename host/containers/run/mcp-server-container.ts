import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createInterface } from 'node:readline';
import type Docker from 'dockerode';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { errorMessage, toError } from '../../errors/error-message.ts';
import type { ContainerTransport, ContainerTransportFactory } from '../../services/mcp/mcp-connection.ts';
import type { ServiceTrustDeclaration } from '../../services/service-trust.ts';
import { isDockerNotFound } from '../docker-errors.ts';
import { mergeBlockedPatterns, findBlockedComponent } from '../mounts/mount-patterns.ts';
import { overlaps } from '../mounts/mount-paths.ts';
import { applyGatewayFirewall, removeGatewayFirewall } from '../network/network-host-firewall.ts';
import { gatewayHostAddress } from '../network/network-gateway.ts';
import { resolveProtectedPath } from '../mounts/mount-validation.ts';
import { dataFolderLabel, LABEL_DATA } from './data-folder-label.ts';
import { LABEL_DATA_DIR } from './docker-leftovers.ts';
import { AGENT_USER } from '../image/image-base-offline.ts';
import { launchContainer, type ContainerProcess } from './container-launch.ts';
import { LABEL_MANAGED, type ContainerMount, type ContainerSpec } from './container-spec.ts';

/** The `LABEL_GROUP` of an MCP server's container and network: no group runs there, the service does. */
const MCP_GROUP_PREFIX = 'mcp-';
const DEFAULT_MEMORY_MB = 512;
const STOP_GRACE_MS = 2000;

export interface McpServerContainerOptions {
  docker: Docker;
  /** The host's instance: its stop and the next start's orphan sweep find the container by it. */
  hostInstanceId: string;
  /** The data folder: labels and names say whose the container is, and no server may mount it. */
  dataDir: string;
  /** The config folder (config.toml, .env): no server may mount it either. */
  configDir: string;
}

interface McpServerContainerDeps {
  docker: Docker;
  hostInstanceId: string;
  /** The data folder's labels, as on agent containers, so orphan and leftover cleanup know whose it is. */
  labels: Record<string, string>;
  /** The data folder's short id, in every container and network name. */
  nameScope: string;
  /** Folders no server may mount, whatever the owner lists. */
  protectedPaths: readonly string[];
}

/**
 * Makes the transports of `type = "docker"` MCP servers: each start runs the server in a fresh container
 * made with the agent's hardening (container-spec.ts: all capabilities dropped, no-new-privileges,
 * read-only root, memory and pid limits, the image's unprivileged agent uid), with only the mounts the
 * owner listed and a network of its own. Closing the transport removes the container (and its network).
 */
export function createMcpServerContainers(options: McpServerContainerOptions): ContainerTransportFactory {
  const dataLabel = dataFolderLabel(options.dataDir);
  const deps: McpServerContainerDeps = {
    docker: options.docker,
    hostInstanceId: options.hostInstanceId,
    labels: { [LABEL_DATA]: dataLabel, [LABEL_DATA_DIR]: options.dataDir },
    nameScope: dataLabel.slice(0, 8),
    protectedPaths: [options.dataDir, options.configDir].map(resolveProtectedPath),
  };
  return (name, declaration, env, onStderr) =>
    new McpContainerTransport(deps, name, declaration, env, onStderr);
}

/** The listed mounts, checked: real paths, nothing credential-like, nothing of the host's own state. */
function mcpServerMounts(
  name: string,
  declaration: ServiceTrustDeclaration,
  protectedPaths: readonly string[],
): ContainerMount[] {
  const blocked = mergeBlockedPatterns([]);
  return (declaration.mounts ?? []).map((m) => {
    let real: string;
    try {
      // The folder as it is now: a symlink cannot later point the mount somewhere else.
      real = fs.realpathSync.native(m.host_path);
    } catch (error) {
      throw new Error(`${name}: mount ${m.host_path} cannot be used: ${errorMessage(error)}`, {
        cause: error,
      });
    }
    const hit = findBlockedComponent(real, blocked);
    if (hit)
      throw new Error(
        `${name}: mount ${m.host_path} is refused: "${hit.component}" looks like it holds credentials (pattern ${hit.pattern})`,
      );
    const mine = protectedPaths.find((p) => overlaps(real, p));
    if (mine)
      throw new Error(`${name}: mount ${m.host_path} is refused: it overlaps Carapace's own folder ${mine}`);
    return { hostPath: real, containerPath: m.container_path, readOnly: m.read_write !== true };
  });
}

/** An MCP transport over a container's stdin and stdout, the way the SDK's stdio transport reads a child's. */
class McpContainerTransport implements ContainerTransport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private process: ContainerProcess | undefined;
  private network: string | undefined;
  private readonly buffer = new ReadBuffer();
  /** Settles once the container is gone and its network removed. */
  private ended: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: McpServerContainerDeps,
    private readonly name: string,
    private readonly declaration: ServiceTrustDeclaration,
    private readonly env: Record<string, string>,
    private readonly onStderr: (line: string) => void,
  ) {}

  get containerName(): string | undefined {
    return this.process?.name;
  }

  async start(): Promise<void> {
    const { docker, nameScope } = this.deps;
    const group = `${MCP_GROUP_PREFIX}${this.name}`;
    const labels = { ...this.deps.labels, [LABEL_MANAGED]: '1' };
    const mounts = mcpServerMounts(this.name, this.declaration, this.deps.protectedPaths);
    const memoryMb = this.declaration.memory_mb ?? DEFAULT_MEMORY_MB;
    let network: ContainerSpec['network'] = { mode: 'none' };
    if (this.declaration.network === 'egress') {
      // One name per server and data folder: a network a crashed host left behind is taken over.
      this.network = `carapace-${group}-${nameScope}`;
      await createEgressNetwork(docker, this.network, labels);
      network = { mode: 'own', networkName: this.network };
    }
    const { command, args } = this.declaration;
    try {
      this.process = await launchContainer(
        docker,
        {
          groupId: group,
          // Fresh at each start: a container of an earlier, crashed host may still hold the last name.
          runId: randomBytes(4).toString('hex'),
          nameScope,
          image: this.declaration.image ?? '',
          // `command` replaces the image's entrypoint (and its command with `args`); `args` alone go to it.
          server: {
            user: AGENT_USER,
            ...(command ? { entrypoint: [command], command: args ?? [] } : args ? { command: args } : {}),
          },
          mounts,
          env: this.env,
          network,
          limits: { memoryMb, cpus: 1, pids: 256 },
          // Never armed (deferTimeouts): a server lives as long as the host wants it; calls time out themselves.
          timeouts: { hardMs: 1, idleMs: 1, graceMs: STOP_GRACE_MS },
          labels: this.deps.labels,
          hostInstanceId: this.deps.hostInstanceId,
        },
        { deferTimeouts: true },
      );
    } catch (error) {
      await this.removeNetwork();
      throw error;
    }
    const { stdout, stderr, exited } = this.process;
    stdout.on('data', (chunk: Buffer) => {
      this.buffer.append(chunk);
      this.readMessages();
    });
    createInterface({ input: stderr }).on('line', this.onStderr);
    const containerName = this.process.name;
    this.ended = exited.then(async (exit) => {
      if (exit.reason !== 'stopped')
        this.onStderr(
          `container ${containerName} ended: ${exit.reason} ${exit.detail ?? `(exit ${exit.exitCode})`}`,
        );
      await this.removeNetwork();
      this.onclose?.();
    });
  }

  private readMessages(): void {
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.buffer.readMessage();
      } catch (error) {
        // A line that is not JSON-RPC: the server's noise on stdout, reported and skipped.
        this.onerror?.(toError(error));
        continue;
      }
      if (message === null) return;
      this.onmessage?.(message);
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.process?.stdin;
    if (!stdin) return Promise.reject(new Error('the server container is not running'));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    const process = this.process;
    if (!process) return this.removeNetwork();
    await process.stop('the host closed the server', STOP_GRACE_MS);
    await this.ended;
  }

  private async removeNetwork(): Promise<void> {
    const network = this.network;
    if (!network) return;
    this.network = undefined;
    await removeNetwork(this.deps.docker, network).catch((error: unknown) =>
      this.onStderr(`network ${network} not removed: ${errorMessage(error)}`),
    );
  }
}

/**
 * A bridge network for one server that wants the internet: outbound traffic is forwarded as on Docker's
 * default bridge, but the host's own addresses are closed to it by the same INPUT chain the gateway
 * network gets, with no port open. Without those rules the server could reach every service of the host,
 * so the server does not start then.
 */
async function createEgressNetwork(
  docker: Docker,
  name: string,
  labels: Record<string, string>,
): Promise<void> {
  await removeNetwork(docker, name);
  await docker.createNetwork({
    Name: name,
    Driver: 'bridge',
    Internal: false,
    CheckDuplicate: true,
    Labels: labels,
    Options: { 'com.docker.network.bridge.enable_icc': 'false' },
  });
  const hostAddress = await gatewayHostAddress(docker, name).catch(() => undefined);
  const firewall = hostAddress
    ? await applyGatewayFirewall(docker, { networkName: name, hostAddress, allowTcpPorts: [] })
    : { applied: false, reason: 'the network has no IPv4 gateway' };
  if (!firewall.applied) {
    await docker
      .getNetwork(name)
      .remove()
      .catch(() => undefined);
    throw new Error(
      `network = "egress" needs firewall rules that keep the server off the host's own services, and they ` +
        `could not be applied (${firewall.reason ?? 'unknown'}); run Carapace as root or use network = "none"`,
    );
  }
}

/** A server's network and its firewall chain; nothing when it is not there. */
async function removeNetwork(docker: Docker, name: string): Promise<void> {
  try {
    await removeGatewayFirewall(docker, name);
    await docker.getNetwork(name).remove();
  } catch (error) {
    if (!isDockerNotFound(error)) throw error;
  }
}
