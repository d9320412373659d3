/**
 * One billable request in flight per run key. The agent asks the model one call at a time; a container
 * that opens many at once is trying to spend faster than the cap can see, so the extra ones are refused.
 */
export interface RunSlots {
  /** A release function when the run had no request in flight, else undefined. */
  take(runId: string): (() => void) | undefined;
}

export function createRunSlots(): RunSlots {
  const busy = new Set<string>();
  return {
    take(runId) {
      if (busy.has(runId)) return undefined;
      busy.add(runId);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        busy.delete(runId);
      };
    },
  };
}
