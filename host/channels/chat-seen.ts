import type { Channel } from './channel.ts';
import type { GroupsStore } from '../store/groups-store.ts';
import type { ChatsSeenStore } from '../store/chats-seen-store.ts';

/**
 * Remembers a chat a channel saw, as a candidate for `groups add`: a chat already registered as a group is
 * none, and neither is the channel's admin chat (it already is the admin conversation).
 */
export function rememberChatSeen(
  store: { groups: Pick<GroupsStore, 'findByChat'>; chatsSeen: Pick<ChatsSeenStore, 'seen'> },
  channel: Pick<Channel, 'name' | 'adminChatId'>,
  chat: { chatId: string; title: string },
): void {
  if (chat.chatId === channel.adminChatId()) return;
  if (store.groups.findByChat(channel.name, chat.chatId)) return;
  store.chatsSeen.seen(channel.name, chat.chatId, chat.title);
}
