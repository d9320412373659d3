import type { ApprovalsStore } from '../store/approvals-store.ts';
import type { GroupsStore } from '../store/groups-store.ts';
import type { NewOutboxItem } from '../store/outbox-store.ts';

/** What the group reads while its run waits: that it waits, never what for (the request is the owner's). */
export const WAITING_FOR_OWNER_LINE = "⏳ Waiting for the owner's OK before going on.";

export interface WaitingLineDeps {
  approvals: Pick<ApprovalsStore, 'get'>;
  groups: Pick<GroupsStore, 'get'>;
  enqueue(item: NewOutboxItem): void;
}

/**
 * Tells a group that its run waits for the owner's approval, once per request (the outbox key is the
 * request's id), so a long silence has a reason people can see. Nothing of the request is in it: its
 * operation and parameters are for the owner only. The owner's admin chats get the request itself instead.
 */
export function createWaitingLine({ approvals, groups, enqueue }: WaitingLineDeps) {
  return (approvalId: string): void => {
    const request = approvals.get(approvalId);
    if (request?.status !== 'pending') return;
    const group = groups.get(request.groupId);
    if (!group || group.isAdmin) return;
    enqueue({
      idempotencyKey: `waiting-for-owner:${approvalId}`,
      groupId: group.id,
      channel: group.channel,
      chatId: group.chatId,
      runId: request.runId,
      text: WAITING_FOR_OWNER_LINE,
    });
  };
}
