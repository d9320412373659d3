import Docker from 'dockerode';
import { findLeftovers, leftoverCount, type Leftovers } from '../../containers/run/docker-leftovers.ts';
import type { Check } from './doctor-check.ts';
import { errorMessage } from '../../errors/error-message.ts';

export function describeLeftovers(l: Leftovers): string[] {
  return [
    ...l.networks.map((n) => `network ${n.name} (data folder ${n.dataDir})`),
    ...l.chains.map((c) => `firewall chain ${c}`),
    ...l.containers.map((c) => `container ${c.name} (data folder ${c.dataDir})`),
  ];
}

/**
 * Networks, chains and containers of data folders that are gone: each network holds one of Docker's ~31
 * default address pools, and when they run out every gateway-mode group stops answering.
 */
export function checkLeftovers(docker: Docker = new Docker()): Check {
  return async () => {
    let leftovers: Leftovers;
    try {
      leftovers = await findLeftovers(docker);
    } catch (err) {
      return { name: 'docker leftovers', ok: false, detail: `cannot ask Docker: ${errorMessage(err)}` };
    }
    const count = leftoverCount(leftovers);
    return count === 0
      ? {
          name: 'docker leftovers',
          ok: true,
          detail: 'no network, chain or container of a removed data folder',
        }
      : {
          name: 'docker leftovers',
          ok: false,
          detail: `left by data folders that are gone: ${describeLeftovers(leftovers).join('; ')}`,
          fix: 'carapace cleanup',
        };
  };
}
