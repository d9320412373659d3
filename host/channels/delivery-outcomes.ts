import type { Logger } from '../logging/logger.ts';
import type { Store } from '../store/store.ts';
import type { OutboxItem } from '../store/outbox-store.ts';
import type { DeadLetterCause } from './outbox-dispatcher.ts';

/** The audit operation of a chat the platform moved (a Telegram group that became a supergroup). */
export const CHAT_MOVED_OPERATION = 'channel.chat_moved';

export interface DeliveryOutcomeDeps {
  store: Pick<Store, 'groups' | 'outbox' | 'audit' | 'transaction'>;
  /** A host notice to the owner's admin chat(s); the key makes it once. */
  notifyOwner(idempotencyKey: string, text: string): void;
  logger: Logger;
}

/** What the host does about a dead-lettered piece and a moved chat (the outbox dispatcher reports both). */
export function createDeliveryOutcomes({ store, notifyOwner, logger }: DeliveryOutcomeDeps) {
  return {
    onDeadLetter(item: OutboxItem, reason: string, cause: DeadLetterCause = 'permanent'): void {
      const group = item.groupId ? store.groups.get(item.groupId) : undefined;
      const where = group
        ? `group "${group.id}" (${item.channel} chat ${item.chatId})`
        : `${item.channel} chat ${item.chatId}`;
      if (cause === 'poison') {
        // Keyed by piece: the chat itself works, and each message that cannot be sent is news once.
        notifyOwner(
          `poison-piece:${item.id}`,
          `A reply to ${where} was not sent: ${reason}. It began "${firstWords(item.text)}". It is kept ` +
            `as a dead letter (carapace doctor lists it); the group's other replies are delivered.`,
        );
        return;
      }
      // Keyed by chat: a dead chat's every later reply is dead-lettered too, and the owner hears of it once.
      notifyOwner(
        `dead-chat:${item.channel}:${item.chatId}`,
        `Replies to ${where} cannot be delivered: ${reason}. They are kept as dead letters ` +
          `(carapace doctor lists them); remove the group (carapace groups remove <id>) or fix the chat.`,
      );
    },

    onChatMoved(item: OutboxItem, newChatId: string, reason: string): void {
      rebind(item.channel, item.chatId, newChatId, reason, item.groupId);
    },

    /** A channel read the move from the platform before any send found it. */
    rebind(channel: string, fromChatId: string, toChatId: string, reason: string): void {
      rebind(channel, fromChatId, toChatId, reason, null);
    },
  };

  function rebind(channel: string, from: string, to: string, reason: string, groupId: string | null): void {
    const rebound = store.transaction(() => {
      const group = store.groups.rebindChat(channel, from, to);
      const moved = store.outbox.movePending(channel, from, to);
      // Nothing bound and nothing pending: a chat the host never served moved; there is nothing to record.
      if (!group && moved === 0) return false;
      store.audit.record({
        groupId: group?.id ?? groupId,
        operation: CHAT_MOVED_OPERATION,
        decision: 'rebound',
        reason,
        details: { channel, from, to, pendingMoved: moved },
      });
      return true;
    });
    if (rebound) logger.info({ channel, from, to }, 'group re-bound to its moved chat');
  }
}

/** The opening words of a reply, on one line, for a notice that must say which reply it means. */
export function firstWords(text: string, words = 8, chars = 60): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const head = flat.split(' ').slice(0, words).join(' ');
  const cut = head.length > chars ? `${head.slice(0, chars).trimEnd()}…` : head;
  return cut.length < flat.length && !cut.endsWith('…') ? `${cut}…` : cut;
}
