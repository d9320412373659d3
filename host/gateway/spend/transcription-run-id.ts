/**
 * The usage records' run id of a group's transcriptions in one minute (UTC), e.g.
 * `transcription:family:2026-11-27T08:15Z`: voice notes belong to no run, and the minute is the only time a
 * usage row can carry (notes of the same minute add up in one row, so the table grows at most a row a minute).
 */
export function transcriptionRunId(groupId: string, at: number): string {
  return `transcription:${groupId}:${new Date(at).toISOString().slice(0, 16)}Z`;
}

const PREFIX = 'transcription:';
const MINUTE = /:(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})Z$/;

/**
 * Whether a usage run id is a transcription's, and its minute as an ISO time (null for records made before the
 * minute was part of the id, `transcription:<group>`).
 */
export function transcriptionOf(runId: string): { at: string | null } | undefined {
  if (!runId.startsWith(PREFIX)) return undefined;
  const m = MINUTE.exec(runId);
  return { at: m ? `${m[1]}:00.000Z` : null };
}
