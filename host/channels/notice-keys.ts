/**
 * The outbox key of the notice that tells a group its message could not be answered. Clients tell a
 * failure from an answer by it and by the "not finished" notice (`carapace send` exits 1 when either is
 * the last reply).
 */
export function failureNoticeKey(groupId: string, givenThrough: number): string {
  return `giveup:${groupId}:${givenThrough}`;
}

export function isFailureNoticeKey(key: string): boolean {
  return key.startsWith('giveup:');
}

/** The outbox key of the notice that a run stopped after a partial answer (progress messages only). */
export function unfinishedNoticeKey(runId: number): string {
  return `unfinished:${runId}`;
}

/** A reply that says the message was not (completely) answered: a give-up or a "not finished" notice. */
export function isUnansweredNoticeKey(key: string): boolean {
  return isFailureNoticeKey(key) || key.startsWith('unfinished:');
}
