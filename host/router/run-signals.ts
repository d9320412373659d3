/**
 * One AbortSignal per run that fires when the run ends. Whatever the host does on a run's behalf (waiting
 * for the owner's approval, a service call) is bound to it, so nothing outlives the run that asked.
 */
export function createRunSignals() {
  const controllers = new Map<number, AbortController>();
  return {
    signal(runId: number): AbortSignal {
      let c = controllers.get(runId);
      if (!c) {
        c = new AbortController();
        controllers.set(runId, c);
      }
      return c.signal;
    },
    end(runId: number, reason = 'the run ended'): void {
      controllers.get(runId)?.abort(new Error(reason));
      controllers.delete(runId);
    },
  };
}

export type RunSignals = ReturnType<typeof createRunSignals>;
