import { execFile } from 'node:child_process';
import type Docker from 'dockerode';
import { dockerStatusCode, isDockerNotFound } from '../docker-errors.ts';

export const DEFAULT_GATEWAY_NETWORK = 'carapace-gateway';

export interface GatewayNetwork {
  networkName: string;
  /** The host's address on the network (its bridge's IPAM gateway): where host services bind. */
  hostAddress: string;
}

interface NetworkInfo {
  Name: string;
  Internal?: boolean;
  Driver?: string;
  IPAM?: { Config?: { Subnet?: string; Gateway?: string }[] | null };
  Options?: Record<string, string> | null;
}

/**
 * Creates (or checks) the internal bridge network for `gateway`-mode groups. Docker drops traffic
 * forwarded off an internal bridge (no egress beyond the host) and, with ICC off, between its
 * containers; but it leaves the host's own INPUT open: containers can reach every service of the
 * host, on any host address. applyGatewayFirewall (network-host-firewall.ts) closes that once the
 * gateway's port is known. An existing network of that name that is not internal is refused
 * rather than used: that would silently give containers full egress.
 */
export async function ensureGatewayNetwork(
  docker: Docker,
  name: string = DEFAULT_GATEWAY_NETWORK,
  /** Extra labels, e.g. the data folder it serves, so leftovers can be traced (docker-leftovers.ts). */
  labels: Record<string, string> = {},
): Promise<GatewayNetwork> {
  let info = await inspectNetwork(docker, name);
  if (!info) {
    try {
      await docker.createNetwork({
        Name: name,
        Driver: 'bridge',
        Internal: true,
        CheckDuplicate: true,
        Labels: { ...labels, 'carapace.managed': '1' },
        // Groups on the gateway network must not reach each other's containers.
        Options: { 'com.docker.network.bridge.enable_icc': 'false' },
      });
    } catch (error) {
      // Another process created it between our inspect and create: use theirs (checked below).
      if (dockerStatusCode(error) !== 409) throw error;
    }
    info = await inspectNetwork(docker, name);
    if (!info) throw new Error(`Docker network ${name} was created but cannot be inspected.`);
  }
  const icc = info.Options?.['com.docker.network.bridge.enable_icc'];
  if (info.Internal !== true || info.Driver !== 'bridge' || icc !== 'false') {
    throw new Error(
      `Docker network ${name} exists but is not an internal bridge network without inter-container traffic ` +
        `(Internal=${String(info.Internal)}, Driver=${info.Driver}, enable_icc=${icc ?? 'true'}): containers on it ` +
        `could reach the outside or each other. Remove it (docker network rm ${name}) and carapace will recreate it.`,
    );
  }
  return { networkName: name, hostAddress: ipamGateway(info) };
}

/** The host's address on an existing network (its IPAM gateway). */
export async function gatewayHostAddress(docker: Docker, name: string): Promise<string> {
  const info = await inspectNetwork(docker, name);
  if (!info) throw new Error(`Docker network ${name} does not exist; call ensureGatewayNetwork first.`);
  return ipamGateway(info);
}

/**
 * The host's address on Docker's default bridge (docker0), where `full`-mode containers reach the
 * host. The default bridge often lists only a subnet in its IPAM config, so the address is read
 * from the bridge interface itself, and only as a last resort taken as the subnet's first host.
 */
export async function defaultBridgeAddress(docker: Docker): Promise<string> {
  const info = await inspectNetwork(docker, 'bridge');
  if (!info)
    throw new Error('Docker has no default "bridge" network; is the engine started with --bridge=none?');
  const configs = info.IPAM?.Config ?? [];
  const gateway = configs.find((c) => c.Gateway && !c.Gateway.includes(':'))?.Gateway;
  if (gateway) return gateway.split('/')[0]!;
  const bridgeName = info.Options?.['com.docker.network.bridge.name'] ?? 'docker0';
  const fromInterface = await interfaceAddress(bridgeName);
  if (fromInterface) return fromInterface;
  const subnet = configs.find((c) => c.Subnet && !c.Subnet.includes(':'))?.Subnet;
  const first = subnet ? firstHost(subnet) : undefined;
  if (!first) throw new Error(`Cannot tell the host's address on Docker's default bridge (${bridgeName}).`);
  return first;
}

/** IPv4 address of a network interface, including one without carrier (docker0 with no containers). */
async function interfaceAddress(name: string): Promise<string | undefined> {
  const result = await new Promise<string>((resolve) => {
    execFile('ip', ['-4', '-o', 'addr', 'show', 'dev', name], (error, stdout) =>
      resolve(error ? '' : stdout),
    );
  });
  return /\binet (\d+\.\d+\.\d+\.\d+)\//.exec(result)?.[1];
}

function firstHost(cidr: string): string | undefined {
  const match = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr);
  if (!match) return undefined;
  const [a, b, c, d, bits] = match.slice(1).map(Number) as [number, number, number, number, number];
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
  const network = ((((a << 24) | (b << 16) | (c << 8) | d) >>> 0) & mask) >>> 0;
  const host = (network + 1) >>> 0;
  return [host >>> 24, (host >>> 16) & 255, (host >>> 8) & 255, host & 255].join('.');
}

async function inspectNetwork(docker: Docker, name: string): Promise<NetworkInfo | undefined> {
  try {
    const info = (await docker.getNetwork(name).inspect()) as NetworkInfo;
    // Docker resolves names by prefix of ids too; make sure we got the network of that name.
    return info.Name === name ? info : undefined;
  } catch (error) {
    if (isDockerNotFound(error)) return undefined;
    throw error;
  }
}

function ipamGateway(info: NetworkInfo): string {
  const config = (info.IPAM?.Config ?? []).find((c) => c.Gateway && !c.Gateway.includes(':'));
  if (!config?.Gateway) {
    throw new Error(
      `Docker network ${info.Name} has no IPv4 gateway address in its IPAM config; recreate it.`,
    );
  }
  return config.Gateway.split('/')[0]!;
}
