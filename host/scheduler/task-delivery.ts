import type { GroupRecord, GroupsStore } from '../store/groups-store.ts';
import type { MessagesStore, NewMessage } from '../store/messages-store.ts';
import type { TaskFiring } from './scheduler.ts';

export const SCHEDULER_SENDER_ID = 'scheduler';
export const SCHEDULED_TASK_PREFIX = '[scheduled task]';

/**
 * The message a firing puts into its group: a triggering message from the host itself. Its external id
 * names the task and the instant it was due, so the same firing can never be stored twice.
 */
export function scheduledTaskMessage(
  firing: TaskFiring,
  group: Pick<GroupRecord, 'id' | 'channel' | 'chatId'>,
): NewMessage {
  return {
    groupId: group.id,
    channel: group.channel,
    chatId: group.chatId,
    externalId: `scheduled:${firing.task.id}:${firing.dueAt}`,
    senderId: SCHEDULER_SENDER_ID,
    senderName: SCHEDULER_SENDER_ID,
    text: `${SCHEDULED_TASK_PREFIX} ${firing.task.prompt}`,
    sentAt: new Date(firing.firedAt).toISOString(),
    triggers: true,
  };
}

/**
 * The scheduler's `deliver` and `onDelivered` over the host's stores: store the message as the host would
 * (synchronously, inside the scheduler's transaction), then tell the queue once it is committed.
 */
export function createTaskDelivery(deps: {
  groups: Pick<GroupsStore, 'get' | 'markTainted'>;
  messages: Pick<MessagesStore, 'insert'>;
  notify(groupId: string): void;
}) {
  return {
    deliver(firing: TaskFiring): void {
      const group = deps.groups.get(firing.task.groupId);
      // The task row cascades away with its group, so this only happens if the group vanished mid-transaction.
      if (!group)
        throw new Error(`group "${firing.task.groupId}" of task ${firing.task.id} no longer exists`);
      deps.messages.insert(scheduledTaskMessage(firing, group));
      // The prompt now sits in the group's history: the group, and so the run this message starts, takes
      // on the taint of the run that wrote it.
      const { taint } = firing.task;
      if (taint.corruption || taint.secret) deps.groups.markTainted(group.id, taint);
    },
    onDelivered(firing: TaskFiring): void {
      deps.notify(firing.task.groupId);
    },
  };
}
