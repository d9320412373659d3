/**
 * The outbox key of the notice that tells a group its message could not be answered. Clients tell a
 * failure from an answer by it (`carapace send` exits 1 when that notice was the only reply).
 */
export function failureNoticeKey(groupId: string, givenThrough: number): string {
  return `giveup:${groupId}:${givenThrough}`;
}

export function isFailureNoticeKey(key: string): boolean {
  return key.startsWith('giveup:');
}
