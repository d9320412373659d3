/**
 * What a run has read, which decides how much its next risky action needs to be checked.
 * corruption: it read something an attacker could write (another person's message, web content, the
 * output of a network command). secret: it read something that must not leave (secret data, a workspace
 * marked as holding secrets).
 */
export interface Taint {
  corruption: boolean;
  secret: boolean;
}

export function describeTaint(t: Taint): string {
  if (t.corruption && t.secret) return 'corruption+secret';
  if (t.corruption) return 'corruption';
  if (t.secret) return 'secret';
  return 'none';
}

/** Per-run taint, set by the host as the run reads; it only ever grows. */
export function createTaintRegistry(initial: (runId: number) => Taint, maxRuns = 1000) {
  const runs = new Map<number, Taint>();
  const get = (runId: number): Taint => {
    let t = runs.get(runId);
    if (!t) {
      t = { ...initial(runId) };
      runs.set(runId, t);
      // Runs end; a bounded map keeps the host from growing forever without tracking run ends here.
      if (runs.size > maxRuns) runs.delete(runs.keys().next().value as number);
    }
    return t;
  };
  return {
    get: (runId: number): Taint => ({ ...get(runId) }),
    markCorrupted(runId: number): void {
      get(runId).corruption = true;
    },
    markSecret(runId: number): void {
      get(runId).secret = true;
    },
  };
}

export type TaintRegistry = ReturnType<typeof createTaintRegistry>;
