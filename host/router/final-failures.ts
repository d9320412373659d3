import type { RunOutcome } from './agent-runner.ts';

/**
 * Things that happen during a run and decide, if the run then fails, that running it again cannot help:
 * the owner denied one of its messages (a second run writes the same answer), the provider refused the
 * host's key (every run would get the same 401). Noted while the run lasts by whoever sees them (the
 * message policy, the gateway), applied once to its outcome when it ends, then forgotten.
 */
export interface FinalFailures {
  /** The owner denied (or let expire) a message of the run. */
  withheld(runId: number, reason: string): void;
  /** Trying again cannot help until the owner fixes something. */
  final(runId: number, reason: string): void;
  /** The run's outcome with what was noted applied (only to a failure); forgets the run. */
  settle(runId: number, outcome: RunOutcome): RunOutcome;
}

export function createFinalFailures(): FinalFailures {
  const notes = new Map<number, { reason: string; withheld: boolean }>();
  const note = (runId: number, reason: string, withheld: boolean) => {
    const seen = notes.get(runId);
    // A denial decides what the group reads, whatever else was noted.
    if (!seen || (withheld && !seen.withheld)) notes.set(runId, { reason, withheld });
  };
  return {
    withheld: (runId, reason) => note(runId, reason, true),
    final: (runId, reason) => note(runId, reason, false),
    settle(runId, outcome) {
      const seen = notes.get(runId);
      notes.delete(runId);
      if (!seen || outcome.ok) return outcome;
      return {
        ok: false,
        reason: `${seen.reason} (${outcome.reason})`,
        retryable: false,
        ...(seen.withheld ? { withheld: true } : {}),
      };
    },
  };
}
