import type { HostConfig } from './schema.ts';
import { accountDefaultsOf } from '../channels/account-defaults.ts';
import { credentialConfigProblems } from '../gateway/credential/credential-grants.ts';
import { mcpServerNames } from '../services/mcp/mcp-services.ts';
import { createServiceRegistry, type ServiceRegistry } from '../services/service-registry.ts';
import { createWebFetchService, WEB_FETCH_SERVICE } from '../services/web-fetch.ts';
import { assertAdminCleanRoom, CleanRoomError } from '../security/policies/admin-clean-room.ts';

/**
 * The built-in host services. `config` is read at each call, so a reloaded `[web_fetch]` applies to the
 * next fetch. MCP servers declared in `[services]` come on top (knownServiceNames).
 */
export function createHostServiceRegistry(config: () => HostConfig): ServiceRegistry {
  return createServiceRegistry({ web_fetch: createWebFetchService({ config: () => config().web_fetch }) });
}

/** Every service a group may be given: the built-in ones and the MCP servers the config declares. */
export function knownServiceNames(config: HostConfig, registry: ServiceRegistry): string[] {
  return [...new Set([...registry.names(), ...mcpServerNames(config.services)])].sort();
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
 * What `[services]` and the groups' `services` lists must not say: a group given a service that does not
 * exist (a typo grants nothing), an MCP server under a built-in's name, and a stdio server (code the host
 * runs) for a group other than the admin group unless the owner opted in with `allow_non_admin`.
 */
export function serviceConfigProblems(
  config: HostConfig,
  registry: ServiceRegistry,
  adminGroupId: string,
): string[] {
  const problems: string[] = [];
  const known = knownServiceNames(config, registry);
  for (const name of mcpServerNames(config.services)) {
    if (registry.lookup(name))
      problems.push(`[services.${name}] is a built-in service; give the MCP server another name`);
  }
  for (const [id, group] of Object.entries(config.groups)) {
    for (const service of group.services ?? []) {
      const declared = config.services[service];
      if (!known.includes(service))
        problems.push(
          `groups.${id}.services: there is no service "${service}" (the host has ${known.join(', ') || 'none'})`,
        );
      else if (declared?.type === 'stdio' && id !== adminGroupId && declared.allow_non_admin !== true)
        problems.push(
          `groups.${id}.services: ${service} runs a program on this computer, so only the admin group may use it ` +
            `unless [services.${service}] says allow_non_admin = true`,
        );
    }
  }
  return problems;
}

/**
 * The checks of the config that `start` refuses to run without, beyond its schema (services, credentials
 * and the admin clean room): `carapace doctor`
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
  const problems = [
    ...serviceConfigProblems(config, registry, adminGroupId),
    ...credentialConfigProblems(
      { ...config, accounts: mapValues(config.channels, accountDefaultsOf) },
      adminGroupId,
    ),
  ];
  if (problems.length > 0) throw new CleanRoomError(`refusing to start: ${problems.join('; ')}`);
}

const mapValues = <V, W>(record: Record<string, V>, f: (v: V) => W): Record<string, W> =>
  Object.fromEntries(Object.entries(record).map(([k, v]) => [k, f(v)]));
