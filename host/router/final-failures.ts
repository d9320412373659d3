import type { RunOutcome } from './agent-runner.ts';

/**
 * Things that happen during a run and decide, if the run then fails, that running it again cannot help:
 * the owner denied one of its messages (a second run writes the same answer), the provider refused the
 * host's key (every run would get the same 401), or a provider hung (a retry now would hang as long again,
 * though the next message may well work). Noted while the run lasts by whoever sees them (the message
 * policy, the gateway), applied once to its outcome when it ends, then forgotten.
 */
export interface FinalFailures {
  /** The owner denied (or let expire) a message of the run. */
  withheld(runId: number, reason: string): void;
  /** Trying again cannot help until the owner fixes something. */
  final(runId: number, reason: string): void;
  /** Trying again at once would repeat the failure, but nothing needs fixing: the next message tries again. */
  transient(runId: number, reason: string): void;
  /** The group's spend cap refused a request: final for today; the run's end tells the cap's line. */
  capped(runId: number, reason: string): void;
  /** The run's outcome with what was noted applied (only to a failure); forgets the run. */
  settle(runId: number, outcome: RunOutcome): RunOutcome;
}

export function createFinalFailures(): FinalFailures {
  type Kind = 'withheld' | 'capped' | 'final' | 'transient';
  // What decides what the group and the owner read when several were noted: a denial, then anything the
  // owner must act on, then a passing failure.
  const rank: Record<Kind, number> = { withheld: 3, capped: 2, final: 2, transient: 1 };
  const notes = new Map<number, { reason: string; kind: Kind }>();
  const note = (runId: number, reason: string, kind: Kind) => {
    const seen = notes.get(runId);
    if (!seen || rank[kind] > rank[seen.kind]) notes.set(runId, { reason, kind });
  };
  return {
    withheld: (runId, reason) => note(runId, reason, 'withheld'),
    final: (runId, reason) => note(runId, reason, 'final'),
    transient: (runId, reason) => note(runId, reason, 'transient'),
    capped: (runId, reason) => note(runId, reason, 'capped'),
    settle(runId, outcome) {
      const seen = notes.get(runId);
      notes.delete(runId);
      if (!seen || outcome.ok) return outcome;
      return {
        ok: false,
        reason: `${seen.reason} (${outcome.reason})`,
        retryable: false,
        ...(seen.kind === 'withheld' ? { withheld: true } : {}),
        ...(seen.kind === 'capped' ? { capped: true } : {}),
        ...(seen.kind === 'transient' ? { transient: true } : {}),
      };
    },
  };
}
