import type { Logger } from '../logging/logger.ts';
import { isOwnerMessage } from '../admin/owner-check.ts';
import { adminCommandReplyKey } from '../admin/admin-command-handler.ts';
import type { InboundMessage, InboundResult } from '../channels/channel.ts';
import type { GroupRecord } from '../store/groups-store.ts';
import type { MessageMedia } from '../store/messages-store.ts';
import type { Store } from '../store/store.ts';
import { carriesStrangerWords, textAsRead } from './message-origin.ts';
import { DEFAULT_TRIGGER, shouldTrigger, triggerPattern, type TriggerSettings } from './trigger-rules.ts';

export interface IngestDeps {
  store: Pick<Store, 'groups' | 'messages'> & Partial<Pick<Store, 'chatsSeen'>>;
  /**
   * Owner commands in the admin chat (approve, deny, pending); truthy when it consumed the message, with
   * what a decision did in a word or two (`brief`).
   */
  adminCommands?: {
    handle(m: InboundMessage, group: GroupRecord): boolean | { brief?: string };
    auditStray?(m: InboundMessage): void;
  };
  /** Read for every message: a reloaded `[assistant] name` is the trigger word from the next one on. */
  assistantName: () => string;
  /** A group's trigger settings (`[groups.<id>] trigger`, `allowed_senders`), read for every message. */
  triggerSettings?(groupId: string): TriggerSettings;
  onTriggered(groupId: string, m: InboundMessage): void;
  logger: Logger;
}

/** What the media step (media/media-ingest.ts) adds to a message it stored or refused the file of. */
export interface IngestExtras {
  /** The file as stored (or why not): recorded on the message. Such a message is never a command. */
  media?: MessageMedia;
  /** The text carries words that are not the owner's (a stranger's transcript): the group is corrupted. */
  strangerWords?: boolean;
}

/** The group a message joins: its chat's, or the admin group for the owner writing from an admin chat. */
export function groupOf(
  store: { groups: Pick<Store['groups'], 'findByChat' | 'admin'> },
  m: Pick<InboundMessage, 'channel' | 'chatId' | 'fromOwner'>,
): GroupRecord | undefined {
  return store.groups.findByChat(m.channel, m.chatId) ?? (m.fromOwner ? store.groups.admin() : undefined);
}

/**
 * The one entry point for every channel: store first (so nothing received is lost), then decide.
 * A message the adapter attests as the owner's in their admin chat joins the admin group, whatever chat
 * it came from. Messages from other chats that are not registered groups are never stored: only the chat
 * (channel, id, title, when) is remembered, for `carapace chats`. Words the sender forwarded or quoted are
 * their author's (message-origin.ts): fenced, tainting, and never a command.
 */
export function createIngest({
  store,
  assistantName,
  onTriggered,
  logger,
  adminCommands,
  triggerSettings = () => DEFAULT_TRIGGER,
}: IngestDeps) {
  let compiled = { name: assistantName(), pattern: triggerPattern(assistantName()) };
  const currentPattern = () => {
    const name = assistantName();
    if (name !== compiled.name) compiled = { name, pattern: triggerPattern(name) };
    return compiled.pattern;
  };
  return (m: InboundMessage, extras: IngestExtras = {}): InboundResult => {
    const group = groupOf(store, m);
    if (!group) {
      store.chatsSeen?.seen(m.channel, m.chatId, m.chatTitle ?? m.chatId);
      adminCommands?.auditStray?.(m);
      logger.debug({ channel: m.channel, chatId: m.chatId }, 'message from an unregistered chat not stored');
      return { stored: false, duplicate: false, triggered: false };
    }
    // Decided before storing: an approval is an instruction to the host, never context for an agent. A
    // message with media is never one: a caption or a transcript is not the owner typing a command.
    const command = extras.media ? false : adminCommands?.handle(m, group);
    if (command) {
      const brief = typeof command === 'object' ? command.brief : undefined;
      return {
        stored: false,
        duplicate: false,
        triggered: false,
        groupId: group.id,
        commandReplyKey: adminCommandReplyKey(m),
        ...(brief ? { commandBrief: brief } : {}),
      };
    }
    const triggers = shouldTrigger(group, m, currentPattern(), triggerSettings(group.id));
    const strangerWords = carriesStrangerWords(m) || extras.strangerWords === true;
    const messageId = store.messages.insert({
      groupId: group.id,
      channel: m.channel,
      chatId: m.chatId,
      externalId: m.externalId,
      senderId: m.senderId,
      senderName: m.senderName,
      text: textAsRead(m),
      sentAt: m.sentAt,
      triggers,
      fromOwner: isOwnerMessage(m) && !strangerWords,
      ...(extras.media ? { media: extras.media } : {}),
    });
    if (messageId === undefined)
      return { stored: false, duplicate: true, triggered: false, groupId: group.id };
    // A stranger's words now sit in the group's history, whoever forwarded them: the group's standing
    // taint, which every run of it reads (also one already running, see taint.ts), until the owner clears it.
    if (strangerWords) store.groups.markTainted(group.id, { corruption: true, secret: false });
    if (triggers) onTriggered(group.id, m);
    return { stored: true, duplicate: false, triggered: triggers, messageId, groupId: group.id };
  };
}
