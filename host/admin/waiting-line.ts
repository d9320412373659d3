import type { Channel } from '../channels/channel.ts';
import { LOCAL_CHANNEL } from '../channels/local/local-channel.ts';
import type { Logger } from '../logging/logger.ts';
import type { ApprovalsStore } from '../store/approvals-store.ts';
import type { GroupsStore } from '../store/groups-store.ts';
import type { NewOutboxItem, OutboxItem, OutboxStore } from '../store/outbox-store.ts';

/** What the group reads while its run waits: that it waits, never what for (the request is the owner's). */
export const WAITING_FOR_OWNER_LINE = "⏳ Waiting for the owner's OK before going on.";

const KEY_PREFIX = 'waiting-for-owner:';
const lineKey = (approvalId: string) => `${KEY_PREFIX}${approvalId}`;

export interface WaitingLineDeps {
  approvals: Pick<ApprovalsStore, 'get'>;
  groups: Pick<GroupsStore, 'get'>;
  outbox: Pick<OutboxStore, 'delivered' | 'platformIds'>;
  enqueue(item: NewOutboxItem): void;
  /** The started channel of that name, if any. */
  channelFor(name: string): Pick<Channel, 'unsend'> | undefined;
  logger: Logger;
}

/**
 * Tells a group that its run waits for the owner's approval, once per request (the outbox key is the
 * request's id), so a long silence has a reason people can see, and takes the line back once the request is
 * settled where the channel can (`unsend`). Nothing of the request is in it: its operation and parameters
 * are for the owner only. The admin group gets no line: the owner has the request itself; nor does a console
 * group, whose only member is the owner at this machine (and whose `carapace send` would print the line as
 * the run's answer).
 */
export function createWaitingLine(deps: WaitingLineDeps) {
  const { approvals, groups, outbox } = deps;
  const pending = (approvalId: string) => approvals.get(approvalId)?.status === 'pending';
  const takeBack = (piece: { channel: string; chatId: string; platformId: string }) => {
    const channel = deps.channelFor(piece.channel);
    void channel?.unsend?.({ chatId: piece.chatId, platformId: piece.platformId }).catch((err: unknown) => {
      deps.logger.warn({ err, channel: piece.channel }, 'could not take the waiting line back');
    });
  };
  return {
    /** The owner was sent the request: the group whose run asked is told it waits. */
    asked(approvalId: string): void {
      const request = approvals.get(approvalId);
      if (request?.status !== 'pending') return;
      const group = groups.get(request.groupId);
      if (!group || group.isAdmin || group.channel === LOCAL_CHANNEL) return;
      deps.enqueue({
        idempotencyKey: lineKey(approvalId),
        groupId: group.id,
        channel: group.channel,
        chatId: group.chatId,
        runId: request.runId,
        text: WAITING_FOR_OWNER_LINE,
      });
    },
    /** The approval service's change event: a settled request's line goes. */
    onChange(approvalId: string): void {
      if (pending(approvalId)) return;
      for (const piece of outbox.delivered(lineKey(approvalId))) takeBack(piece);
    },
    /** A line delivered after its request was settled (its channel was down) goes at once. */
    onDelivered(item: OutboxItem): void {
      if (!item.idempotencyKey.startsWith(KEY_PREFIX)) return;
      const approvalId = item.idempotencyKey.slice(KEY_PREFIX.length);
      const platformId = outbox.platformIds(item.id).at(-1);
      if (pending(approvalId) || platformId === undefined) return;
      takeBack({ channel: item.channel, chatId: item.chatId, platformId });
    },
  };
}
