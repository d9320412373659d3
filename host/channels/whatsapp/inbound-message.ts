import { normalizeMessageContent, type proto, type WAMessage } from '@whiskeysockets/baileys';
import type { InboundMessage, MessageOrigin, QuotedContent } from '../channel.ts';
import {
  isBroadcastJid,
  isGroupJid,
  isLidJid,
  isPhoneJid,
  isSelf,
  normalizeUserJid,
  type SelfIdentity,
} from './jids.ts';
import { mediaOf, type WhatsAppMediaSpec } from './whatsapp-media.ts';

export const WHATSAPP_CHANNEL = 'whatsapp';

export interface InboundContext {
  self: SelfIdentity;
  /** Whether this adapter sent the message (ids recorded by the host, or sends still in flight here). */
  isOwnMessage(chatId: string, messageId: string): boolean;
  groupTitle(chatId: string): string | undefined;
  /** The phone JID Baileys has mapped to a LID, when it has one. */
  phoneForLid(lid: string): string | undefined;
}

export type InboundDecision =
  /** `media`: the file the message carries; the message's text is then its caption (maybe empty). */
  { kind: 'ingest'; message: InboundMessage; media?: WhatsAppMediaSpec } | { kind: 'skip'; reason: string };

const skip = (reason: string): InboundDecision => ({ kind: 'skip', reason });

/**
 * One upserted WhatsApp message → what the host stores, or why nothing is. Only groups and the linked
 * account's own "Message yourself" chat are read: the account is a person's own number, and their private
 * chats are none of the host's business (not stored, not even listed).
 */
export function translateInbound(msg: WAMessage, ctx: InboundContext): InboundDecision {
  const key = msg.key;
  const id = key.id;
  if (!id) return skip('no message id');
  const remote = key.remoteJid ?? undefined;
  const fromMe = key.fromMe === true;

  // Status posts, broadcast lists and newsletters are one-to-many sends, not conversations: never an
  // admin chat, never stored, whoever posted them (the account's own status post included).
  if (isBroadcastJid(remote)) return skip('a status post, broadcast list or newsletter');
  let chatId: string;
  let selfChat = false;
  if (isGroupJid(remote)) {
    chatId = remote;
  } else if (isSelf(ctx.self, remote)) {
    // The self-chat is recognised from the chat itself: the account's phone JID or its LID, one chat id
    // for both. Never from `remoteJidAlt`: Baileys fills it with the *sender's* other id, which is the
    // account's own for everything it sends (a status post, a message to a friend).
    chatId = ctx.self.phone;
    selfChat = true;
  } else {
    return skip('not a group or the self-chat');
  }

  // The bot's own sends come back as fromMe upserts (`append`, or `notify` from history): never input.
  if (fromMe && (ctx.isOwnMessage(chatId, id) || (remote !== undefined && ctx.isOwnMessage(remote, id)))) {
    return skip('sent by this host');
  }
  // Only the account itself writes in its self-chat; anything else there is not the owner.
  if (selfChat && !fromMe) return skip('self-chat message not from the linked account');

  const content = normalizeMessageContent(msg.message);
  const media = mediaOf(content);
  // A file's placeholder is the host's to write, once it knows what the file is; the text is the caption.
  const body = media ? { text: media.caption, contextInfo: media.contextInfo } : describeContent(content);
  if (!body) return skip('no text or media (protocol message, reaction, receipt…)');

  const senderId = selfChat || (fromMe && !key.participant) ? ctx.self.phone : senderOf(key, ctx);
  if (!senderId) return skip('no sender');
  const context = body.contextInfo;
  const mentioned = context?.mentionedJid ?? [];
  const quotedId = context?.stanzaId ?? undefined;

  return {
    kind: 'ingest',
    message: {
      channel: WHATSAPP_CHANNEL,
      chatId,
      ...(selfChat ? {} : titleOf(ctx, chatId)),
      externalId: id,
      senderId,
      senderName: msg.pushName?.trim() || senderId.split('@')[0] || senderId,
      text: body.text,
      sentAt: sentAtOf(msg),
      mentionsBot: mentioned.some((jid) => isSelf(ctx.self, jid)),
      repliesToBot: quotedId !== undefined && ctx.isOwnMessage(chatId, quotedId),
      // Attested from platform facts only: the linked account writing in its own self-chat. The owner's
      // account writing in a group is a member like any other.
      fromOwner: selfChat && fromMe,
      origin: originOf(context),
      ...quotedOf(context, ctx, chatId, selfChat && fromMe),
    },
    ...(media ? { media: media.spec } : {}),
  };
}

/**
 * A forward is someone else's words. WhatsApp marks it (`isForwarded`, `forwardingScore`) but does not
 * say whose they were, so its author is never the owner.
 */
function originOf(context: proto.IContextInfo | null | undefined): MessageOrigin {
  if (context?.isForwarded !== true && !(Number(context?.forwardingScore ?? 0) > 0)) return { kind: 'own' };
  return { kind: 'forwarded', author: 'someone (WhatsApp does not say who)', authorIsOwner: false };
}

/**
 * The quoted message's text, with its author. The author comes from the sender's client, so only a quote
 * the owner makes in their own self-chat of their own message counts as the owner's; a quote of the bot's
 * own message is the agent's reply and not included.
 */
function quotedOf(
  context: proto.IContextInfo | null | undefined,
  ctx: InboundContext,
  chatId: string,
  ownerWrites: boolean,
): { quoted?: QuotedContent } {
  const text = describeContent(normalizeMessageContent(context?.quotedMessage ?? undefined))?.text;
  if (!text) return {};
  if (context?.stanzaId && ctx.isOwnMessage(chatId, context.stanzaId)) return {};
  const participant = context?.participant ?? undefined;
  // A quote from another chat (`remoteJid`) is never the self-chat's own history.
  const elsewhere = !!context?.remoteJid && !isSelf(ctx.self, context.remoteJid);
  const byOwner = ownerWrites && !elsewhere && (participant === undefined || isSelf(ctx.self, participant));
  const author = byOwner ? 'the owner' : (participant?.split('@')[0] ?? 'someone');
  return { quoted: { text, author, authorIsOwner: byOwner } };
}

function titleOf(ctx: InboundContext, chatId: string): { chatTitle?: string } {
  const title = ctx.groupTitle(chatId);
  return title ? { chatTitle: title } : {};
}

/**
 * The sender of a group message, by phone number where WhatsApp (or Baileys' LID map) gives one, else by
 * LID: a sender whose LID has no phone mapping is kept under the LID, never dropped. `participantAlt` (the
 * group sender's other id) is the one alternate id read: it names a person, never a chat.
 */
function senderOf(key: WAMessage['key'], ctx: InboundContext): string | undefined {
  const ids = [key.participant, (key as { participantAlt?: string }).participantAlt]
    .map((j) => normalizeUserJid(j))
    .filter((j): j is string => j !== undefined);
  const phone = ids.find((j) => isPhoneJid(j));
  if (phone) return phone;
  const lid = ids.find((j) => isLidJid(j));
  if (!lid) return undefined;
  return normalizeUserJid(ctx.phoneForLid(lid)) ?? lid;
}

function sentAtOf(msg: WAMessage): string {
  const ts = Number(msg.messageTimestamp ?? 0);
  return new Date(ts > 0 ? ts * 1000 : Date.now()).toISOString();
}

interface Body {
  text: string;
  contextInfo?: proto.IContextInfo | null;
}

const withCaption = (placeholder: string, caption: string | null | undefined) =>
  caption?.trim() ? `${placeholder} ${caption}` : placeholder;

/**
 * Text, or a placeholder for what is not text: what the agent reads for a quoted message, and for content
 * the host does not take in as a file (a sticker, a location, a contact, a poll); undefined for the rest.
 */
function describeContent(m: proto.IMessage | undefined): Body | undefined {
  if (!m) return undefined;
  if (m.conversation?.trim()) return { text: m.conversation };
  const x = m.extendedTextMessage;
  if (x?.text?.trim()) return { text: x.text, contextInfo: x.contextInfo };
  if (m.imageMessage)
    return { text: withCaption('[photo]', m.imageMessage.caption), contextInfo: m.imageMessage.contextInfo };
  if (m.videoMessage) {
    const kind = m.videoMessage.gifPlayback ? '[gif]' : '[video]';
    return { text: withCaption(kind, m.videoMessage.caption), contextInfo: m.videoMessage.contextInfo };
  }
  if (m.ptvMessage) return { text: '[video message]', contextInfo: m.ptvMessage.contextInfo };
  if (m.audioMessage) {
    return {
      text: m.audioMessage.ptt ? '[voice message]' : '[audio]',
      contextInfo: m.audioMessage.contextInfo,
    };
  }
  if (m.documentMessage) {
    const d = m.documentMessage;
    const name = d.fileName?.trim() || d.title?.trim();
    return {
      text: withCaption(name ? `[document: ${name}]` : '[document]', d.caption),
      contextInfo: d.contextInfo,
    };
  }
  if (m.stickerMessage) return { text: '[sticker]', contextInfo: m.stickerMessage.contextInfo };
  if (m.locationMessage || m.liveLocationMessage) {
    const l = m.locationMessage;
    const name = l?.name?.trim() || l?.address?.trim();
    return { text: name ? `[location: ${name}]` : '[location]' };
  }
  if (m.contactMessage) {
    const name = m.contactMessage.displayName?.trim();
    return { text: name ? `[contact: ${name}]` : '[contact]', contextInfo: m.contactMessage.contextInfo };
  }
  if (m.contactsArrayMessage) return { text: '[contacts]' };
  const poll = m.pollCreationMessage ?? m.pollCreationMessageV2 ?? m.pollCreationMessageV3;
  if (poll)
    return { text: poll.name?.trim() ? `[poll: ${poll.name}]` : '[poll]', contextInfo: poll.contextInfo };
  return undefined;
}
