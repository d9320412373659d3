import { isDeepStrictEqual } from 'node:util';
import type { HostConfig } from './schema.ts';
import { CleanRoomError } from '../security/policies/admin-clean-room.ts';
import { assertStartableConfig, createHostServiceRegistry } from './service-grants.ts';

/**
 * What the schema cannot see in a changed config: settings for groups that do not exist (a typo would
 * silently configure nobody), services nobody declared, and an admin group given a service that reads
 * public content. Only what the change touches is checked, so an old entry the owner keeps for a group
 * registered later never blocks an unrelated edit; the clean room is checked whole, as at start.
 */
export function configReferenceProblems(
  before: HostConfig,
  after: HostConfig,
  groupExists: (id: string) => boolean,
  adminGroupId: string,
): string[] {
  const problems: string[] = [];
  const changedGroups = Object.keys(after.groups).filter(
    (id) => !isDeepStrictEqual(after.groups[id], before.groups[id]),
  );
  const changedCaps = Object.keys(after.gateway.group_caps_usd).filter(
    (id) => after.gateway.group_caps_usd[id] !== before.gateway.group_caps_usd[id],
  );
  for (const id of new Set([...changedGroups, ...changedCaps])) {
    if (!groupExists(id)) problems.push(`there is no group "${id}"; list_groups shows the registered ones`);
  }
  const registry = createHostServiceRegistry(() => after);
  const declared = registry.names();
  for (const id of changedGroups) {
    for (const service of after.groups[id]?.services ?? []) {
      if (!declared.includes(service))
        problems.push(
          `groups.${id}.services: there is no service "${service}" (the host has ${declared.join(', ') || 'none'})`,
        );
    }
  }
  try {
    assertStartableConfig(after, registry, adminGroupId);
  } catch (err) {
    if (!(err instanceof CleanRoomError)) throw err;
    problems.push(err.message.replace(/^refusing to start: /, ''));
  }
  return problems;
}
