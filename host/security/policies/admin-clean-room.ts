import type { ServiceRegistry } from '../../services/service-registry.ts';
import { effectiveTrust, type ServicesConfig } from '../../services/service-trust.ts';

/** A config `start` refuses to run with: the admin clean room, and the rules of services (service-grants.ts). */
export class CleanRoomError extends Error {}

/**
 * The admin group can approve, register groups and change config, so nothing it reads may be written by
 * strangers. Refuses to start when it is granted a service that reads public content.
 */
export function assertAdminCleanRoom(opts: {
  adminServices: readonly string[];
  registry: ServiceRegistry;
  servicesConfig: ServicesConfig;
  adminGroupId: string;
}): void {
  // A tool of an MCP server may be declared public_source on its own: the server counts as public then.
  const offending = opts.adminServices.filter(
    (name) =>
      effectiveTrust(name, opts.servicesConfig, opts.registry.builtinTrust()).public_source !== false ||
      Object.values(opts.servicesConfig[name]?.tools ?? {}).some(
        (tool) => tool.public_source !== undefined && tool.public_source !== false,
      ),
  );
  if (offending.length > 0) {
    throw new CleanRoomError(
      `refusing to start: the admin group "${opts.adminGroupId}" is given ${offending.join(', ')}, which read${offending.length === 1 ? 's' : ''} ` +
        'public content (public_source). Content from the web or strangers could then steer the one chat that approves actions. ' +
        `Remove ${offending.join(', ')} from [groups.${opts.adminGroupId}] services in config.toml.`,
    );
  }
}
