import type { HostConfig } from './schema.ts';
import { createServiceRegistry, type ServiceRegistry } from '../services/service-registry.ts';
import { createWebFetchService, WEB_FETCH_SERVICE } from '../services/web-fetch.ts';
import { assertAdminCleanRoom } from '../security/policies/admin-clean-room.ts';

/**
 * The host services that exist; `[groups.<id>] services` may only name these. `config` is read at each
 * call, so a reloaded `[web_fetch]` applies to the next fetch.
 */
export function createHostServiceRegistry(config: () => HostConfig): ServiceRegistry {
  return createServiceRegistry({ web_fetch: createWebFetchService({ config: () => config().web_fetch }) });
}

/**
 * What a group may call: its configured list, else web_fetch for other groups and nothing for the admin
 * group. Read at each call, so a reloaded `services` list applies to the next call.
 */
export function serviceGrants(
  config: () => HostConfig,
): (group: { id: string; isAdmin: boolean }) => string[] {
  return (group) => config().groups[group.id]?.services ?? (group.isAdmin ? [] : [WEB_FETCH_SERVICE]);
}

/**
 * The checks of the config that `start` refuses to run without, beyond its schema: `carapace doctor`
 * runs this same function, so it cannot pass a config that start refuses. `adminGroupId` is the group the
 * store flags admin (admin-group.ts `adminGroupId`), never an id assumed here.
 */
export function assertStartableConfig(
  config: HostConfig,
  registry: ServiceRegistry,
  adminGroupId: string,
): void {
  assertAdminCleanRoom({
    adminServices: serviceGrants(() => config)({ id: adminGroupId, isAdmin: true }),
    registry,
    servicesConfig: config.services,
    adminGroupId,
  });
}
