import type { Store } from '../store/store.ts';

/** Groups with a run within the last `withinMs`, most recent first: their next run is likely soon. */
export function recentlyActiveGroups(store: Store, withinMs: number) {
  const since = Date.now() - withinMs;
  const ids = new Set<string>();
  for (const run of store.runs.recent(100)) if (Date.parse(run.startedAt) >= since) ids.add(run.groupId);
  return [...ids].flatMap((id) => store.groups.get(id) ?? []);
}
