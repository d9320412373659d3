import { LOCAL_CHANNEL } from '../channels/local/local-names.ts';
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
