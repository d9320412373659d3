/**
 * Which escalated commands the host allowed, per run, until the agent reports running them
 * (`bash.ran`). A command reported as run "with the host's leave" that is not in here was never allowed.
 */
export interface BashLedger {
  grant(runId: number, command: string): void;
  /** Takes one grant of this command; false when there is none. */
  consume(runId: number, command: string): boolean;
  forget(runId: number): void;
}

/** Grants kept per run: more allowed-but-unreported commands than this is not an agent at work. */
const MAX_OPEN_GRANTS = 256;

export function createBashLedger(): BashLedger {
  const runs = new Map<number, Map<string, number>>();
  return {
    grant(runId, command) {
      const grants = runs.get(runId) ?? new Map<string, number>();
      runs.set(runId, grants);
      if (grants.size >= MAX_OPEN_GRANTS && !grants.has(command)) return;
      grants.set(command, (grants.get(command) ?? 0) + 1);
    },
    consume(runId, command) {
      const grants = runs.get(runId);
      const count = grants?.get(command) ?? 0;
      if (grants === undefined || count === 0) return false;
      if (count === 1) grants.delete(command);
      else grants.set(command, count - 1);
      return true;
    },
    forget(runId) {
      runs.delete(runId);
    },
  };
}
