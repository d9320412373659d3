import type { Channel } from '../channels/channel.ts';
import type { GroupsStore } from '../store/groups-store.ts';
import type { NewOutboxItem, OutboxAction } from '../store/outbox-store.ts';

export interface AdminChat {
  channel: string;
  chatId: string;
}

export interface AdminChatsDeps {
  groups: Pick<GroupsStore, 'admin'>;
  /** The started channels, read on every call (a channel learns its admin chat once it is linked). */
  channels(): Iterable<Channel>;
  /** `[admin] notify`: channel names that get notices; undefined means every linked admin chat. */
  notifyChannels(): readonly string[] | undefined;
  enqueue(item: NewOutboxItem): void;
}

/**
 * The owner's admin chats: the admin group's own chat (the console) and every channel's admin chat once
 * linked (the WhatsApp self-chat, the owner's private chat with the Telegram bot). All of them are one
 * conversation, the admin group; notices and approval requests go to each of them.
 */
export function createAdminChats({ groups, channels, notifyChannels, enqueue }: AdminChatsDeps) {
  const linked = (): AdminChat[] => {
    const chats: AdminChat[] = [];
    const admin = groups.admin();
    if (admin) chats.push({ channel: admin.channel, chatId: admin.chatId });
    for (const ch of channels()) {
      const chatId = ch.adminChatId();
      if (chatId !== undefined && !chats.some((c) => c.channel === ch.name && c.chatId === chatId)) {
        chats.push({ channel: ch.name, chatId });
      }
    }
    return chats;
  };
  const same = (a: AdminChat, b: AdminChat | undefined) =>
    !!b && a.channel === b.channel && a.chatId === b.chatId;

  return {
    /** Every linked admin chat, the admin group's own first. */
    linked,
    /** Whether a chat is one of the owner's admin chats. */
    isAdminChat: (chat: AdminChat) => linked().some((c) => same(c, chat)),
    /**
     * A host notice to the admin chats that `[admin] notify` names (all by default), except `except` (the
     * chat a decision was taken in already has its answer). The admin group's own chat keeps the plain
     * key, others get `<key>@<channel>`, so each chat gets the notice once.
     */
    notify(key: string, text: string, opts: { except?: AdminChat; actions?: OutboxAction[] } = {}): void {
      const admin = groups.admin();
      const only = notifyChannels();
      const all = linked();
      let chosen = all.filter((c) => !only || only.includes(c.channel));
      // Named channels whose admin chats are not linked (yet) must not silence the host: the console hears it.
      if (chosen.length === 0) chosen = all.slice(0, 1);
      for (const chat of chosen) {
        if (same(chat, opts.except)) continue;
        const own = admin && same(chat, admin);
        enqueue({
          idempotencyKey: own ? key : `${key}@${chat.channel}:${chat.chatId}`,
          groupId: admin?.id ?? null,
          channel: chat.channel,
          chatId: chat.chatId,
          runId: null,
          text,
          ...(opts.actions ? { actions: opts.actions } : {}),
        });
      }
    },
  };
}

export type AdminChats = ReturnType<typeof createAdminChats>;
