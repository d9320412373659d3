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

export interface TaintRegistryDeps {
  /**
   * The taint a run has from outside it (its group's standing taint, the group's trust). Read at every
   * check, not only at the start: a stranger's words stored in the group while the run runs (a message
   * the owner forwarded into the admin chat) reach the run as a follow-up and taint it at once.
   */
  initial(runId: number): Taint;
  /**
   * Called whenever a run's taint grows. What a tainted run read may stay in its group's history or memory
   * file, so the caller makes it the group's standing taint for later runs.
   */
  onTainted(runId: number, taint: Taint): void;
}

/** Per-run taint, set by the host as the run reads; it only ever grows, and is forgotten when the run ends. */
export function createTaintRegistry({ initial, onTainted }: TaintRegistryDeps) {
  const runs = new Map<number, Taint>();
  const get = (runId: number): Taint => {
    const standing = initial(runId);
    let t = runs.get(runId);
    if (!t) {
      t = { ...standing };
      runs.set(runId, t);
    } else {
      // Only ever grows: the owner clearing the group's taint does not clear what a running run read.
      t.corruption ||= standing.corruption;
      t.secret ||= standing.secret;
    }
    return t;
  };
  const grow = (runId: number, change: Partial<Taint>) => {
    const t = get(runId);
    const before = describeTaint(t);
    Object.assign(t, change);
    if (describeTaint(t) !== before) onTainted(runId, { ...t });
  };
  return {
    get: (runId: number): Taint => ({ ...get(runId) }),
    markCorrupted: (runId: number) => grow(runId, { corruption: true }),
    markSecret: (runId: number) => grow(runId, { secret: true }),
    forget(runId: number): void {
      runs.delete(runId);
    },
  };
}

export type TaintRegistry = ReturnType<typeof createTaintRegistry>;
