import path from 'node:path';
import {
  createSqliteUsageStore,
  type SqliteUsageStore,
} from '../../host/gateway/spend/usage-store-sqlite.ts';
import { openStore, type Store } from '../../host/store/store.ts';
import { makeTempDir, removeTempDir } from './temp-dir.ts';

export interface SpendDb {
  store: Store;
  /** The gateway's usage store on the same database, to write records as the gateway does. */
  usage: SqliteUsageStore;
  close(): void;
}

/** A fresh host database with local groups of these ids, the first one the admin group. */
export function openSpendDb(groupIds: readonly string[]): SpendDb {
  const dir = makeTempDir();
  const store = openStore({ file: path.join(dir, 'carapace.db') });
  groupIds.forEach((id, i) =>
    store.groups.add({ id, channel: 'local', chatId: id, name: id, isAdmin: i === 0 }),
  );
  return {
    store,
    usage: createSqliteUsageStore(store.db),
    close() {
      store.close();
      removeTempDir(dir);
    },
  };
}
