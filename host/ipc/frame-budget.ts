/**
 * What one run may cost the host in protocol problems. A container can write anything to its stdout;
 * each malformed line used to cost a log line and a synchronous audit insert, without bound (300,000
 * junk lines grew the audit table by 41 MiB and stalled every other group). Now the first few problems
 * are audited one by one, the rest are only counted (one summary row when the run ends), and past a
 * limit the run is stopped: its stream is not read any further.
 */
export interface FrameBudgetLimits {
  /** Problems audited (and logged) one by one. */
  auditFirst: number;
  /** Problems after which the run is stopped. */
  stopAfter: number;
}

export const DEFAULT_FRAME_BUDGET: FrameBudgetLimits = { auditFirst: 10, stopAfter: 200 };

export type FrameBudgetStep = 'audit' | 'count' | 'stop' | 'ignore';

export interface FrameBudget {
  /** What to do with one more problem: audit it, only count it, stop the run (once), or ignore it. */
  next(): FrameBudgetStep;
  /** Whether problem logs are still wanted. */
  logging(): boolean;
  /** Problems counted but not audited one by one. */
  unaudited(): number;
}

export function createFrameBudget(limits: FrameBudgetLimits = DEFAULT_FRAME_BUDGET): FrameBudget {
  let problems = 0;
  return {
    next() {
      problems += 1;
      if (problems <= limits.auditFirst) return 'audit';
      if (problems === limits.stopAfter + 1) return 'stop';
      return problems > limits.stopAfter ? 'ignore' : 'count';
    },
    logging: () => problems < limits.auditFirst,
    unaudited: () => Math.max(0, Math.min(problems, limits.stopAfter + 1) - limits.auditFirst),
  };
}
