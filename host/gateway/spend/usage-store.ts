/** One completed upstream request, attributed to the run and group that owned the gateway key. */
export interface UsageRecord {
  runId: string;
  groupId: string;
  /** Calendar day "YYYY-MM-DD" in the assistant's time zone. */
  day: string;
  /** The model name sent upstream (after any fallback). */
  model: string;
  promptTokens: number;
  completionTokens: number;
  costMicros: number;
}

/**
 * Where the gateway keeps token usage and spend. Implementations may be synchronous (better-sqlite3) or
 * asynchronous; the gateway awaits both.
 */
export interface UsageStore {
  recordUsage(record: UsageRecord): void | Promise<void>;
  /** Total cost recorded for the group on that day, in micro-dollars. */
  spentTodayMicros(groupId: string, day: string): number | Promise<number>;
  /** Writes what the store holds back (usage-write-behind.ts); stores that write at once have none. */
  flush?(): unknown;
}
