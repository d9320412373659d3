import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type Docker from 'dockerode';
import { errorMessage } from '../../errors/error-message.ts';

/**
 * Why this exists: Docker (20.10 at least) gives containers on an `Internal` network a default
 * route via the bridge address, and only filters FORWARDED traffic. Packets to any address of the
 * host itself (its LAN address, docker0, the bridge address on every port) go through INPUT,
 * which Docker leaves open. So without this, a gateway-mode container can reach every service on
 * the host. These rules make the host's INPUT from the gateway bridge accept only the allowed TCP
 * ports on the bridge address and reject everything else.
 */
export interface GatewayFirewall {
  /** True when the rules are in place. */
  applied: boolean;
  /** The iptables commands (for the owner to run as root when `applied` is false). */
  commands: string[];
  /** Why the rules are not in place. */
  reason?: string;
}

export type IptablesRunner = (args: string[]) => Promise<{ code: number; output: string }>;

export interface GatewayFirewallOptions {
  networkName: string;
  hostAddress: string;
  /** TCP ports on the host address that containers may reach (the LLM gateway, host services). */
  allowTcpPorts: readonly number[];
  /** Runs iptables; default: the host's iptables binary. */
  iptables?: IptablesRunner;
}

export async function applyGatewayFirewall(
  docker: Docker,
  options: GatewayFirewallOptions,
): Promise<GatewayFirewall> {
  const info = (await docker.getNetwork(options.networkName).inspect()) as {
    Id: string;
    Options?: Record<string, string> | null;
  };
  const bridge = info.Options?.['com.docker.network.bridge.name'] ?? `br-${info.Id.slice(0, 12)}`;
  const chain = gatewayChainName(info.Id);
  const ports = [...new Set(options.allowTcpPorts)].filter((p) => Number.isInteger(p) && p > 0 && p < 65536);
  const rules: string[][] = [
    ...(ports.length > 0
      ? [
          [
            '-A',
            chain,
            '-p',
            'tcp',
            '-d',
            options.hostAddress,
            '-m',
            'multiport',
            '--dports',
            ports.join(','),
            '-j',
            'ACCEPT',
          ],
        ]
      : []),
    // REJECT rather than DROP: a blocked connect fails at once instead of hanging the agent.
    ['-A', chain, '-j', 'REJECT'],
  ];
  const jump = ['INPUT', '-i', bridge, '-j', chain];
  const commands = [
    `iptables -w -N ${chain}`,
    `iptables -w -F ${chain}`,
    ...rules.map((r) => `iptables -w ${r.join(' ')}`),
    `iptables -w -C ${jump.join(' ')} || iptables -w -I ${jump.join(' ')}`,
  ];

  const iptables = options.iptables ?? hostIptables();
  if (!iptables) {
    return { applied: false, commands, reason: 'iptables is not installed on the host' };
  }
  if (!options.iptables && process.getuid?.() !== 0) {
    return { applied: false, commands, reason: 'changing the host firewall needs root (CAP_NET_ADMIN)' };
  }
  const run = async (args: string[], okCodes: number[] = [0]) => {
    const result = await iptables(['-w', ...args]);
    if (!okCodes.includes(result.code))
      throw new Error(`iptables ${args.join(' ')} failed: ${result.output.trim()}`);
    return result.code;
  };
  try {
    await run(['-N', chain], [0, 1]); // 1: the chain exists already
    await run(['-F', chain]);
    for (const rule of rules) await run(rule);
    if ((await run(['-C', ...jump], [0, 1])) !== 0) await run(['-I', ...jump]);
    return { applied: true, commands };
  } catch (error) {
    return { applied: false, commands, reason: errorMessage(error) };
  }
}

/** Removes the rules applyGatewayFirewall installed for a network (before removing the network). */
export async function removeGatewayFirewall(
  docker: Docker,
  networkName: string,
  iptablesRunner?: IptablesRunner,
): Promise<void> {
  const info = (await docker.getNetwork(networkName).inspect()) as {
    Id: string;
    Options?: Record<string, string> | null;
  };
  const bridge = info.Options?.['com.docker.network.bridge.name'] ?? `br-${info.Id.slice(0, 12)}`;
  await removeFirewallChain(gatewayChainName(info.Id), bridge, iptablesRunner);
}

/** The chain applyGatewayFirewall makes for a network id (iptables chain names hold at most 28 characters). */
export function gatewayChainName(networkId: string): string {
  return `${GATEWAY_CHAIN_PREFIX}${networkId.slice(0, 12)}`;
}

export const GATEWAY_CHAIN_PREFIX = 'CARAPACE-GW-';

/** Removes a gateway chain and its INPUT jump; for a chain whose network is gone, the bridge is `br-<id>`. */
export async function removeFirewallChain(
  chain: string,
  bridge: string,
  iptablesRunner?: IptablesRunner,
): Promise<void> {
  const iptables = iptablesRunner ?? hostIptables();
  if (!iptables) return;
  while ((await iptables(['-w', '-D', 'INPUT', '-i', bridge, '-j', chain])).code === 0) {
    // A jump inserted twice (two hosts racing) is deleted twice.
  }
  await iptables(['-w', '-F', chain]);
  await iptables(['-w', '-X', chain]);
}

export function hostIptables(): IptablesRunner | undefined {
  const binary = ['/usr/sbin/iptables', '/sbin/iptables', '/usr/bin/iptables'].find((p) => fs.existsSync(p));
  if (!binary) return undefined;
  return (args) =>
    new Promise((resolve) => {
      execFile(path.resolve(binary), args, (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, output: `${stdout}${stderr}` });
      });
    });
}
