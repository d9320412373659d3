import type { Logger } from '../../logging/logger.ts';
import { LIMITS, type ServiceTool } from '../../../container-agent/src/protocol.ts';
import { errorMessage } from '../../errors/error-message.ts';
import {
  effectiveTrust,
  forbiddenProperties,
  toolTrust,
  type ServicesConfig,
  type ServiceTrust,
} from '../service-trust.ts';
import type { McpServices } from './mcp-services.ts';
import { toolOverride } from './mcp-config.ts';
import { offeredTool } from './mcp-tools.ts';

export interface ToolCatalogueDeps {
  mcp: McpServices;
  services(): ServicesConfig;
  builtinTrust(): Record<string, ServiceTrust>;
  logger: Pick<Logger, 'warn'>;
}

/**
 * The MCP tools a run is offered: every tool of the granted servers that is not forbidden, listed from
 * each server's cache. A server that cannot list its tools is left out (and logged) rather than holding
 * up the run; the agent then simply does not see it, and the host's `status` says why.
 */
export function createToolCatalogue(deps: ToolCatalogueDeps) {
  return async function toolsFor(granted: readonly string[]): Promise<ServiceTool[]> {
    const services = deps.services();
    // Listed side by side: a server being started lazily must not hold up the others.
    const listed = await Promise.all(
      granted.map(async (service) => {
        const connection = deps.mcp.connection(service);
        if (!connection) return [];
        try {
          return (await connection.tools()).map((tool) => ({ service, tool }));
        } catch (error) {
          deps.logger.warn(
            { service, err: errorMessage(error) },
            'MCP server left out of the run: no tool list',
          );
          return [];
        }
      }),
    );
    const offered: ServiceTool[] = [];
    for (const { service, tool } of listed.flat()) {
      const trust = toolTrust(
        effectiveTrust(service, services, deps.builtinTrust()),
        toolOverride(services[service], tool.name),
      );
      if (forbiddenProperties(trust).length > 0) continue;
      const entry = offeredTool(service, tool);
      if (entry && offered.length < LIMITS.serviceTools) offered.push(entry);
    }
    return offered;
  };
}
