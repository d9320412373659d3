import type Docker from 'dockerode';
import type { Logger } from '../../logging/logger.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { gatewayNetworkName, LABEL_DATA } from '../run/data-folder-label.ts';
import type { RunNetworks } from '../run/docker-agent-runner.ts';
import { LABEL_DATA_DIR, removeGatewayNetwork } from '../run/docker-leftovers.ts';
import { applyGatewayFirewall } from './network-host-firewall.ts';
import { defaultBridgeAddress, ensureGatewayNetwork } from './network-gateway.ts';

export interface RunNetworksDeps {
  docker: Docker;
  /** The LLM gateway the runs reach: it listens on the addresses found here. */
  gateway: { listen(addresses: string[]): Promise<unknown>; readonly port: number | unknown };
  /** `[containers] gateway_network`. */
  configuredName: string;
  dataDir: string;
  dataLabel: string;
  hostInstanceId: string;
  /** The gateway network was made: its removal, for the runtime's closers. */
  onNetwork(name: string, remove: () => Promise<void>): void;
  logger: Logger;
}

/**
 * The networks runs join: "full" on Docker's bridge, and the isolated "gateway" network behind a firewall
 * that lets its containers reach only the gateway's port. Starts the gateway listening on the addresses
 * containers reach it at. A "gateway" network without its rules is refused (fail closed), with the fix.
 */
export async function setUpRunNetworks(
  d: RunNetworksDeps,
): Promise<{ networks: RunNetworks; addresses: string[] }> {
  const { docker } = d;
  const bridge = await defaultBridgeAddress(docker);
  const networks: RunNetworks = { full: { hostAddress: bridge }, gateway: { unavailable: 'not set up yet' } };
  const addresses = ['127.0.0.1', bridge];
  let gatewayNet: { networkName: string; hostAddress: string } | undefined;
  try {
    // One network per data folder: its firewall chain allows only this host's gateway port, so a second
    // host sharing the network would cut the first one's containers off.
    gatewayNet = await ensureGatewayNetwork(docker, gatewayNetworkName(d.configuredName, d.dataDir), {
      [LABEL_DATA]: d.dataLabel,
      [LABEL_DATA_DIR]: d.dataDir,
    });
    // Made at each start, so removed at each stop: nothing of this host stays in Docker or iptables.
    const name = gatewayNet.networkName;
    d.onNetwork('gateway network', () => removeGatewayNetwork(docker, name, d.hostInstanceId));
    addresses.push(gatewayNet.hostAddress);
  } catch (err) {
    networks.gateway = {
      unavailable: `the isolated "gateway" network could not be created: ${errorMessage(err)}`,
    };
  }
  await d.gateway.listen(addresses);
  if (gatewayNet) {
    const firewall = await applyGatewayFirewall(docker, {
      networkName: gatewayNet.networkName,
      hostAddress: gatewayNet.hostAddress,
      allowTcpPorts: [d.gateway.port as number],
    });
    if (firewall.applied) networks.gateway = gatewayNet;
    else {
      // Without the rules a "gateway" container could reach every service on the host: fail closed.
      networks.gateway = {
        unavailable:
          `groups in "gateway" network mode cannot run: their isolation rules are not in place (${firewall.reason ?? 'unknown'}). ` +
          // The rules name the gateway's port, which is chosen at each start: only the host can keep
          // them right, so the fix is to run it as root (or give such groups network mode "full").
          'Run Carapace as root, or give such groups network mode "full" (carapace groups add … --network full)',
      };
      d.logger.error(
        { reason: firewall.reason },
        'gateway network firewall not applied; gateway-mode groups will not run',
      );
    }
  }

  return { networks, addresses };
}
