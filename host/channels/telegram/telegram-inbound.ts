import type { Message, MessageEntity, MessageOrigin as TelegramOrigin, User } from 'grammy/types';
import type { InboundMessage, MessageOrigin, QuotedContent } from '../channel.ts';
import { TELEGRAM_CHANNEL } from './telegram-config.ts';
import { mediaOf, type TelegramMediaSpec } from './telegram-media.ts';

/** The bot as getMe describes it, and who owns it; everything inbound normalisation needs to know. */
export interface BotIdentity {
  id: number;
  /** Without the "@". */
  username: string;
  /** Unset until the owner configures it: then nobody is the owner here. */
  ownerUserId: number | undefined;
}

/** What to do with one Telegram message. Only `ingest` reaches the host. */
export type InboundDecision =
  /** `media`: the file the message carries; the message's text is then its caption (maybe empty). */
  | { kind: 'ingest'; message: InboundMessage; media?: TelegramMediaSpec }
  /** A private chat with someone who is not the owner: one short refusal, nothing stored. */
  | { kind: 'refuse'; chatId: number; userId: number }
  /** `/start` in a private chat: tell the user their id (how the owner finds owner_user_id). */
  | { kind: 'tell-id'; chatId: number; userId: number; isOwner: boolean; ownerUnset: boolean }
  | { kind: 'ignore'; reason: string };

/**
 * The conversation a message belongs to. Forum topics are conversations of their own, `<chat>/<thread>`;
 * the General topic (no thread id, or thread 1) is the plain chat id, and Telegram refuses sends to
 * General that name its thread, so the plain id is also how replies go back there.
 */
export function conversationId(m: Pick<Message, 'chat' | 'message_thread_id' | 'is_topic_message'>): string {
  const forum = m.chat.type === 'supergroup' && m.chat.is_forum === true;
  const thread = m.message_thread_id;
  if (forum && thread !== undefined && thread !== 1) return `${m.chat.id}/${thread}`;
  return String(m.chat.id);
}

/** Splits a conversation id back into what sendMessage takes. */
export function parseConversationId(chatId: string): { chatId: number; threadId?: number } {
  const match = /^(-?\d+)(?:\/(\d+))?$/.exec(chatId);
  if (!match)
    throw new Error(`"${chatId}" is not a Telegram chat id (e.g. -1001234567890 or -1001234567890/42)`);
  const id = Number(match[1]);
  return match[2] === undefined ? { chatId: id } : { chatId: id, threadId: Number(match[2]) };
}

/** What the agent reads for a message whose content the host does not take in as a file. */
export function mediaPlaceholder(m: Message): string | undefined {
  if (m.photo) return '[photo]';
  if (m.voice) return '[voice message]';
  if (m.video_note) return '[video message]';
  if (m.video) return '[video]';
  if (m.animation) return '[animation]';
  if (m.audio) return `[audio${m.audio.title ? `: ${m.audio.title}` : ''}]`;
  if (m.document) return `[document${m.document.file_name ? `: ${m.document.file_name}` : ''}]`;
  if (m.sticker) return `[sticker${m.sticker.emoji ? ` ${m.sticker.emoji}` : ''}]`;
  if (m.location) return '[location]';
  if (m.contact) return '[contact]';
  if (m.poll) return `[poll: ${m.poll.question}]`;
  return undefined;
}

/** Text, caption, or placeholder plus caption: what the agent reads. */
export function messageText(m: Message): string | undefined {
  const placeholder = mediaPlaceholder(m);
  const body = m.text ?? m.caption;
  if (placeholder && body) return `${placeholder} ${body}`;
  return placeholder ?? body;
}

function mentions(text: string, entities: MessageEntity[] | undefined, bot: BotIdentity): boolean {
  const handle = `@${bot.username}`.toLowerCase();
  return (entities ?? []).some((e) => {
    if (e.type === 'text_mention') return e.user.id === bot.id;
    if (e.type === 'mention') return text.slice(e.offset, e.offset + e.length).toLowerCase() === handle;
    return false;
  });
}

const userName = (u: User) =>
  [u.first_name, u.last_name].filter(Boolean).join(' ') || u.username || String(u.id);

function senderName(m: Message): string {
  // Anonymous admins and channels write as a chat; `from` is then a placeholder bot.
  if (m.sender_chat && 'title' in m.sender_chat && m.sender_chat.title) return m.sender_chat.title;
  return m.from ? userName(m.from) : 'unknown';
}

/** Who a forward's or an external reply's origin names; the owner only by their user id. */
function originAuthor(o: TelegramOrigin, bot: BotIdentity): { author: string; authorIsOwner: boolean } {
  switch (o.type) {
    case 'user':
      return { author: userName(o.sender_user), authorIsOwner: o.sender_user.id === bot.ownerUserId };
    case 'hidden_user':
      return { author: o.sender_user_name, authorIsOwner: false };
    case 'chat':
      return { author: o.sender_chat.title ?? 'a chat', authorIsOwner: false };
    case 'channel':
      return { author: o.chat.title ?? 'a channel', authorIsOwner: false };
  }
}

/**
 * Whose words a message's content is: a forward (`forward_origin`) is its origin's, whoever forwarded it;
 * what an inline bot wrote (`via_bot`) is that bot's, though the sender picked it.
 */
function originOf(m: Message, bot: BotIdentity): MessageOrigin {
  if (m.forward_origin) return { kind: 'forwarded', ...originAuthor(m.forward_origin, bot) };
  if (m.via_bot) return { kind: 'forwarded', author: viaBotName(m.via_bot), authorIsOwner: false };
  return { kind: 'own' };
}

const viaBotName = (b: User) => (b.username ? `@${b.username}` : userName(b));

/**
 * The quoted part of the message replied to (`quote`), with its author from the platform. A message from
 * another chat (`external_reply`) is named by its origin but never counted as the owner's own words: the
 * Bot API does not say whether that origin is who wrote it or who last sent it on. A replied-to message
 * here is its own origin's (a forward the owner made is still its author's), else its sender's. A quote of
 * the bot's own message is the agent's own reply, and not included.
 */
function quotedOf(m: Message, bot: BotIdentity): QuotedContent | undefined {
  const text = m.quote?.text;
  if (!text) return undefined;
  if (m.external_reply) return { text, ...originAuthor(m.external_reply.origin, bot), authorIsOwner: false };
  const replied = m.reply_to_message;
  if (!replied) return { text, author: 'someone', authorIsOwner: false };
  const origin = originOf(replied, bot);
  if (origin.kind === 'forwarded')
    return { text, author: origin.author, authorIsOwner: origin.authorIsOwner };
  const from = replied.from;
  if (from?.id === bot.id) return undefined;
  if (!from) return { text, author: 'someone', authorIsOwner: false };
  return { text, author: userName(from), authorIsOwner: from.id === bot.ownerUserId };
}

/** "Group › Topic" for topic messages, whose first reply target is the topic's creation message. */
export function chatTitle(m: Message): string | undefined {
  const group = 'title' in m.chat ? m.chat.title : undefined;
  if (!group) return undefined;
  const topic = m.reply_to_message?.forum_topic_created?.name;
  if (conversationId(m) !== String(m.chat.id)) {
    return `${group} › ${topic ?? `topic ${m.message_thread_id}`}`;
  }
  return group;
}

const withQuote = (quoted: QuotedContent | undefined) => (quoted ? { quoted } : {});

/**
 * Normalises one new message. Edits never come here (see telegram-channel.ts: an edit is not a new turn).
 * Platform facts only: the owner is `from.id == owner_user_id` in the bot's private chat, and nothing in
 * the text can change that.
 */
export function decideInbound(m: Message, bot: BotIdentity): InboundDecision {
  // A group's anonymous admin writes as the group itself (from = GroupAnonymousBot): a member, not a bot.
  const anonymousAdmin = m.sender_chat?.id === m.chat.id;
  if (m.from?.is_bot && !anonymousAdmin) return { kind: 'ignore', reason: 'from a bot' };
  if (m.chat.type === 'channel') return { kind: 'ignore', reason: 'channel posts are not conversations' };
  const media = mediaOf(m);
  // A file's placeholder is the host's to write, once it knows what the file is; the text is the caption.
  const text = media ? (m.caption ?? '') : messageText(m);
  const fromId = m.from?.id;

  if (m.chat.type === 'private') {
    if (fromId === undefined) return { kind: 'ignore', reason: 'no sender' };
    const isOwner = fromId === bot.ownerUserId;
    if (text !== undefined && /^\/start(@\w+)?(\s|$)/.test(text)) {
      return {
        kind: 'tell-id',
        chatId: m.chat.id,
        userId: fromId,
        isOwner,
        ownerUnset: bot.ownerUserId === undefined,
      };
    }
    if (!isOwner) return { kind: 'refuse', chatId: m.chat.id, userId: fromId };
  }
  if (text === undefined) return { kind: 'ignore', reason: 'a service message' };

  const reply = m.reply_to_message;
  // In a forum every topic message replies to the topic's creation message; that is not a reply to the bot.
  const repliesToBot = !!reply && !reply.forum_topic_created && reply.from?.id === bot.id;
  const senderId = anonymousAdmin ? String(m.chat.id) : String(fromId ?? m.sender_chat?.id ?? 'unknown');
  return {
    kind: 'ingest',
    message: {
      channel: TELEGRAM_CHANNEL,
      chatId: conversationId(m),
      chatTitle: chatTitle(m),
      externalId: String(m.message_id),
      senderId,
      senderName: senderName(m),
      text,
      sentAt: new Date(m.date * 1000).toISOString(),
      mentionsBot: mentions(m.text ?? m.caption ?? '', m.entities ?? m.caption_entities, bot),
      repliesToBot,
      fromOwner: m.chat.type === 'private' && fromId !== undefined && fromId === bot.ownerUserId,
      // The owner's own account in any chat: lets them trigger groups set to trigger = "owner", nothing more.
      senderIsOwner: fromId !== undefined && fromId === bot.ownerUserId,
      origin: originOf(m, bot),
      ...withQuote(quotedOf(m, bot)),
    },
    ...(media ? { media } : {}),
  };
}
