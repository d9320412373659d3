import fs from 'node:fs';
import type Docker from 'dockerode';
import { LABEL_HOST, LABEL_MANAGED } from './container-spec.ts';
import { isDockerAlreadyGone, isDockerNotFound } from '../docker-errors.ts';
import {
  GATEWAY_CHAIN_PREFIX,
  hostIptables,
  removeFirewallChain,
  removeGatewayFirewall,
  type IptablesRunner,
} from '../network/network-host-firewall.ts';

/**
 * The data folder a network or container serves, as a path: leftovers are things whose folder is gone
 * (a deleted test or demo folder, a moved install), which no host will ever come back to clean.
 */
export const LABEL_DATA_DIR = 'carapace.data-dir';

export interface Leftovers {
  networks: { id: string; name: string; dataDir: string }[];
  /** Firewall chains whose network is gone or is itself a leftover. */
  chains: string[];
  containers: { id: string; name: string; dataDir: string }[];
}

export interface LeftoverOptions {
  iptables?: IptablesRunner;
  /** Also count this folder's resources (cleanup of a folder whose host is known to be stopped). */
  idleDataDir?: string;
  folderExists?: (dir: string) => boolean;
}

/** Networks, firewall chains and containers that Carapace made for a data folder that no longer exists. */
export async function findLeftovers(docker: Docker, options: LeftoverOptions = {}): Promise<Leftovers> {
  const exists = options.folderExists ?? ((dir: string) => fs.existsSync(dir));
  const orphaned = (dir: string | undefined): dir is string =>
    dir !== undefined && (dir === options.idleDataDir || !exists(dir));
  const allNetworks = await docker.listNetworks({ filters: { label: [`${LABEL_MANAGED}=1`] } });
  const networks = allNetworks
    .filter((n) => orphaned(n.Labels?.[LABEL_DATA_DIR]))
    .map((n) => ({ id: n.Id, name: n.Name, dataDir: n.Labels?.[LABEL_DATA_DIR] as string }));
  const containers = (await docker.listContainers({ all: true, filters: { label: [`${LABEL_MANAGED}=1`] } }))
    .filter((c) => orphaned(c.Labels?.[LABEL_DATA_DIR]))
    .map((c) => ({
      id: c.Id,
      name: (c.Names?.[0] ?? c.Id).replace(/^\//, ''),
      dataDir: c.Labels?.[LABEL_DATA_DIR] as string,
    }));
  // A chain is named after its network's id; one whose network is gone or leaving is a leftover too.
  const kept = (await docker.listNetworks())
    .filter((n) => !networks.some((o) => o.id === n.Id))
    .map((n) => n.Id.slice(0, 12));
  const chains = (await listGatewayChains(options.iptables ?? hostIptables())).filter(
    (chain) => !kept.includes(chain.slice(GATEWAY_CHAIN_PREFIX.length)),
  );
  return { networks, chains, containers };
}

export function leftoverCount(l: Leftovers): number {
  return l.networks.length + l.chains.length + l.containers.length;
}

/** Removes what findLeftovers found: containers first (they hold the networks), then chains, then networks. */
export async function removeLeftovers(
  docker: Docker,
  leftovers: Leftovers,
  iptables: IptablesRunner | undefined = hostIptables(),
): Promise<void> {
  for (const c of leftovers.containers) {
    await docker
      .getContainer(c.id)
      .remove({ force: true })
      .catch((err: unknown) => {
        if (!isDockerAlreadyGone(err)) throw err;
      });
  }
  for (const chain of leftovers.chains) {
    await removeFirewallChain(chain, `br-${chain.slice(GATEWAY_CHAIN_PREFIX.length)}`, iptables);
  }
  for (const n of leftovers.networks) {
    await docker
      .getNetwork(n.id)
      .remove()
      .catch((err: unknown) => {
        if (!isDockerNotFound(err)) throw err;
      });
  }
}

/**
 * What a stopping host does with its gateway network: its own containers go (they are done), then the
 * network's firewall chain, then the network, so Docker's address pools (about 31 networks by default)
 * never fill up with networks of hosts that are gone. A network another container still uses is kept.
 */
export async function removeGatewayNetwork(
  docker: Docker,
  networkName: string,
  hostInstanceId: string,
  iptables?: IptablesRunner,
): Promise<void> {
  const ours = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_HOST}=${hostInstanceId}`] },
  });
  for (const c of ours) {
    await docker
      .getContainer(c.Id)
      .remove({ force: true })
      .catch((err: unknown) => {
        if (!isDockerAlreadyGone(err)) throw err;
      });
  }
  try {
    await removeGatewayFirewall(docker, networkName, iptables);
    await docker.getNetwork(networkName).remove();
  } catch (err) {
    if (!isDockerNotFound(err)) throw err;
  }
}

async function listGatewayChains(iptables: IptablesRunner | undefined): Promise<string[]> {
  if (!iptables) return [];
  const { code, output } = await iptables(['-w', '-S']);
  if (code !== 0) return [];
  return output
    .split('\n')
    .map((line) => /^-N (\S+)$/.exec(line.trim())?.[1])
    .filter((chain): chain is string => chain?.startsWith(GATEWAY_CHAIN_PREFIX) === true);
}
