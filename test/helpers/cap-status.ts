import type Database from 'better-sqlite3';
import { createCapStatus, type CapStatus } from '../../host/gateway/spend/cap-status.ts';
import { gatewayConfigSchema } from '../../host/gateway/config.ts';
import { createSqliteUsageStore } from '../../host/gateway/spend/usage-store-sqlite.ts';

/**
 * The host's cap check over a test's database, as `startHost` wires it: the usage the gateway recorded
 * there against `[gateway]` caps (the defaults unless given), days in UTC.
 */
export function capStatusOver(
  db: Database.Database,
  gateway: Record<string, unknown> = {},
  now: () => number = () => Date.now(),
): (groupId: string) => CapStatus {
  const usage = createSqliteUsageStore(db);
  const config = gatewayConfigSchema.parse(gateway);
  return createCapStatus({
    config: () => config,
    spentTodayMicros: (groupId, day) => usage.spentTodayMicros(groupId, day),
    timezone: () => 'UTC',
    now,
  });
}
