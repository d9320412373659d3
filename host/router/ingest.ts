import type { Logger } from 'pino';
import { adminCommandReplyKey } from '../admin/admin-command-handler.ts';
import type { InboundMessage, InboundResult } from '../channels/channel.ts';
import type { GroupRecord } from '../store/groups-store.ts';
import type { Store } from '../store/store.ts';
import { shouldTrigger, triggerPattern } from './trigger-rules.ts';

export interface IngestDeps {
  store: Store;
  /** Owner commands in the admin chat (approve, deny, pending); true when it consumed the message. */
  adminCommands?: { handle(m: InboundMessage, group: GroupRecord): boolean };
  assistantName: string;
  onTriggered(groupId: string): void;
  logger: Logger;
}

/**
 * The one entry point for every channel: store first (so nothing received is lost), then decide.
 * Messages from chats that are not registered groups are dropped without being stored.
 */
export function createIngest({ store, assistantName, onTriggered, logger, adminCommands }: IngestDeps) {
  const pattern = triggerPattern(assistantName);
  return (m: InboundMessage): InboundResult => {
    const group = store.groups.findByChat(m.channel, m.chatId);
    if (!group) {
      logger.debug({ channel: m.channel, chatId: m.chatId }, 'message from an unregistered chat ignored');
      return { stored: false, duplicate: false, triggered: false };
    }
    // Decided before storing: an approval is an instruction to the host, never context for an agent.
    if (adminCommands?.handle(m, group)) {
      return {
        stored: false,
        duplicate: false,
        triggered: false,
        groupId: group.id,
        commandReplyKey: adminCommandReplyKey(m),
      };
    }
    const triggers = shouldTrigger(group, m, pattern);
    const messageId = store.messages.insert({
      groupId: group.id,
      channel: m.channel,
      chatId: m.chatId,
      externalId: m.externalId,
      senderId: m.senderId,
      senderName: m.senderName,
      text: m.text,
      sentAt: m.sentAt,
      triggers,
    });
    if (messageId === undefined)
      return { stored: false, duplicate: true, triggered: false, groupId: group.id };
    if (triggers) onTriggered(group.id);
    return { stored: true, duplicate: false, triggered: triggers, messageId, groupId: group.id };
  };
}
