import type { UsageRecord, UsageStore } from '../../host/gateway/spend/usage-store.ts';

/** In-memory UsageStore for tests and benchmarks; the host uses the SQLite one. */
export interface MemoryUsageStore extends UsageStore {
  readonly records: UsageRecord[];
  /** Adds spend directly, e.g. to start a test at the cap. */
  addSpend(groupId: string, day: string, costMicros: number): void;
}

export function createMemoryUsageStore(): MemoryUsageStore {
  const records: UsageRecord[] = [];
  return {
    records,
    recordUsage(record) {
      records.push({ ...record });
    },
    spentTodayMicros(groupId, day) {
      return records
        .filter((r) => r.groupId === groupId && r.day === day)
        .reduce((sum, r) => sum + r.costMicros, 0);
    },
    addSpend(groupId, day, costMicros) {
      records.push({
        runId: 'seed',
        groupId,
        day,
        model: 'seed',
        promptTokens: 0,
        completionTokens: 0,
        costMicros,
      });
    },
  };
}
