import type { Finding } from '../secrets/index.ts';
import type { Taint } from '../taint/taint.ts';

/** Whether a draft of a reply may be shown in the run's chat before the reply itself is reviewed. */
export type DraftGate = (text: string) => Promise<boolean>;

/**
 * The outbound checks a draft must pass before any part of it is shown (DESIGN.md, Streamed answers).
 * A draft is an unreviewed message, so it is shown only where the message policy would send the finished
 * reply without asking anyone: the run is untainted (no untrusted content read, no secret read, so neither
 * the Cop nor the private-text rule nor the owner would be asked) and the scanner, with every secret the
 * host holds, finds nothing in the draft itself. Read fresh at every draft: a run that reads a stranger's
 * words mid-answer stops streaming at its next draft. Fails closed: a check that throws hides the draft.
 */
export function createDraftGate(deps: {
  scanSecrets(text: string): Promise<Finding[]>;
  /** The run's taint now (TaintRegistry.get for its run id). */
  taint(): Taint;
}): DraftGate {
  return async (text) => {
    try {
      const t = deps.taint();
      if (t.corruption || t.secret) return false;
      return (await deps.scanSecrets(text)).length === 0;
    } catch {
      return false;
    }
  };
}
