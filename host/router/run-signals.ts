/**
 * One AbortSignal per run that fires when the run ends. Whatever the host does on a run's behalf (waiting
 * for the owner's approval, a service call) is bound to it, so nothing outlives the run that asked.
 *
 * Ended runs are remembered: a request that was already in flight when its run ended asks for the signal
 * afterwards, and must get one that has fired, not a fresh one that never will (an approval would then
 * wait for its full timeout on behalf of a run that is gone).
 */

/** How many ended runs are remembered; a run's requests stop with its session, long before this many end. */
const REMEMBERED_ENDED_RUNS = 4096;

export function createRunSignals() {
  const controllers = new Map<number, AbortController>();
  const ended = new Map<number, Error>();
  return {
    signal(runId: number): AbortSignal {
      const endedWith = ended.get(runId);
      if (endedWith) return AbortSignal.abort(endedWith);
      let c = controllers.get(runId);
      if (!c) {
        c = new AbortController();
        controllers.set(runId, c);
      }
      return c.signal;
    },
    end(runId: number, reason = 'the run ended'): void {
      if (ended.has(runId)) return;
      const error = new Error(reason);
      controllers.get(runId)?.abort(error);
      controllers.delete(runId);
      ended.set(runId, error);
      // A Map keeps insertion order: the first key is the run that ended longest ago.
      if (ended.size > REMEMBERED_ENDED_RUNS) ended.delete(ended.keys().next().value!);
    },
  };
}
