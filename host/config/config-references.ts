import { isDeepStrictEqual } from 'node:util';
import type { HostConfig } from './schema.ts';
import { CleanRoomError } from '../security/policies/admin-clean-room.ts';
import { assertStartableConfig, createHostServiceRegistry } from './service-grants.ts';

/**
 * What the schema cannot see in a changed config: settings for groups that do not exist (a typo would
 * silently configure nobody), services nobody declared, and an admin group given a service that reads
 * public content. Group settings are checked only where the change touches them, so an old entry the owner
 * keeps for a group registered later never blocks an unrelated edit; services and the clean room are checked
 * whole, as at start (a host that started has none of those problems).
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
  // Unknown services and stdio servers for other groups are refused like at start, by the same check.
  try {
    assertStartableConfig(after, registry, adminGroupId);
  } catch (err) {
    if (!(err instanceof CleanRoomError)) throw err;
    problems.push(...err.message.replace(/^refusing to start: /, '').split('; '));
  }
  return problems;
}
