import type { GroupRecord } from '../../store/groups-store.ts';
import type { Taint } from './taint.ts';

/**
 * What a run has read before it reads anything: the taint it starts with. Fails closed: a run whose group
 * cannot be found starts corrupted.
 * - corruption: messages of any group but the owner's admin chat can be written by strangers, and a group
 *   keeps whatever corruption its earlier runs left in its history until the owner clears it.
 * - secret: a group the owner declared `contains_secrets`, or one whose earlier runs read secrets.
 */
export function initialRunTaint(
  group: Pick<GroupRecord, 'isAdmin' | 'taint'> | undefined,
  containsSecrets: boolean,
): Taint {
  return {
    corruption: !group?.isAdmin || group.taint.corruption,
    secret: !!group && (containsSecrets || group.taint.secret),
  };
}
