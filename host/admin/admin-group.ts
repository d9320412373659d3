import { LOCAL_CHANNEL } from '../channels/local/local-names.ts';
import type { GroupsStore } from '../store/groups-store.ts';
import type { Store } from '../store/store.ts';

/** The group whose chat is the owner's: approvals, notices and owner commands live there. */
export const ADMIN_GROUP_ID = 'main';

/** The admin group exists from the first start on, bound to the local console until the owner links others. */
export function ensureAdminGroup(store: Store): void {
  if (!store.groups.get(ADMIN_GROUP_ID)) {
    store.groups.add({
      id: ADMIN_GROUP_ID,
      channel: LOCAL_CHANNEL,
      chatId: ADMIN_GROUP_ID,
      name: 'Admin console',
      isAdmin: true,
    });
  }
}

/**
 * The id of the group flagged admin in the store. A data folder that was never started has none yet: the
 * first start creates it as ADMIN_GROUP_ID, so that is the group checks made before it (doctor) must mean.
 */
export function adminGroupId(groups: Pick<GroupsStore, 'admin'> | undefined): string {
  return groups?.admin()?.id ?? ADMIN_GROUP_ID;
}
