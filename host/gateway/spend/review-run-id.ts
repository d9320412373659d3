/**
 * The usage records' run id of the Cop's reviews for one run, e.g. `review:family:42`: the reviews are the
 * host's calls, not the run's own, so they are their own row (one per run, day and model) and the spend report
 * lists them on their own line. Group ids never contain a colon (GROUP_ID_PATTERN), so the last part is the run.
 */
export function reviewRunId(groupId: string, runId: string): string {
  return `review:${groupId}:${runId}`;
}

const REVIEW = /^review:[^:]+:(.+)$/;

/** Whether a usage run id is the Cop's reviews of a run, and that run's id. */
export function reviewOf(runId: string): { reviewedRunId: string } | undefined {
  const m = REVIEW.exec(runId);
  return m ? { reviewedRunId: m[1] as string } : undefined;
}
