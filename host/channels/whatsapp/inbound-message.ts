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
  const body: Body | undefined = media
    ? { text: media.caption, bare: false, contextInfo: media.contextInfo }
    : describeContent(content);
  if (!body) return skip('no text or media (protocol message, reaction, receipt…)');

  const senderId = selfChat || (fromMe && !key.participant) ? ctx.self.phone : senderOf(key, ctx);
  if (!senderId) return skip('no sender');
  const context = body.bare ? undefined : body.contextInfo;
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
      origin: originOf(body),
      ...quotedOf(context, ctx, chatId, selfChat && fromMe),
    },
    ...(media ? { media: media.spec } : {}),
  };
}

const FORWARD_AUTHOR = 'someone (WhatsApp does not say who)';

/** WhatsApp's forward mark on a content's own context. */
const forwardMarked = (context: proto.IContextInfo | null | undefined) =>
  context?.isForwarded === true || Number(context?.forwardingScore ?? 0) > 0;

/**
 * A forward is someone else's words. WhatsApp marks it (`isForwarded`, `forwardingScore`) on the content's
 * own context, whatever its kind, but does not say whose they were, so its author is never the owner. A
 * message the account sends always carries the mark when it is a forward: no mark is the sender's own.
 */
function originOf(body: Body): MessageOrigin {
  if (body.bare || !forwardMarked(body.contextInfo)) return { kind: 'own' };
  return { kind: 'forwarded', author: FORWARD_AUTHOR, authorIsOwner: false };
}

/**
 * The quoted message's text, with its author. The author comes from the sender's client, so only a quote
 * the owner makes in their own self-chat of their own message counts as the owner's; a quote of the bot's
 * own message is the agent's reply and not included. The quoted copy is made by the quoting client, which
 * may leave out its context (Baileys does), and with it the forward mark: a quote whose kind carries a
 * context is the owner's only when that context is there and unmarked (fail closed). A bare `conversation`
 * has no context to lose, and a forward is never one.
 */
function quotedOf(
  context: proto.IContextInfo | null | undefined,
  ctx: InboundContext,
  chatId: string,
  ownerWrites: boolean,
): { quoted?: QuotedContent } {
  const body = describeContent(normalizeMessageContent(context?.quotedMessage ?? undefined));
  if (!body?.text) return {};
  if (context?.stanzaId && ctx.isOwnMessage(chatId, context.stanzaId)) return {};
  const participant = context?.participant ?? undefined;
  // A quote from another chat (`remoteJid`) is never the self-chat's own history.
  const elsewhere = !!context?.remoteJid && !isSelf(ctx.self, context.remoteJid);
  const forwarded = !body.bare && forwardMarked(body.contextInfo);
  const unmarkedOwn = body.bare || (body.contextInfo != null && !forwarded);
  const byOwner =
    ownerWrites && !elsewhere && unmarkedOwn && (participant === undefined || isSelf(ctx.self, participant));
  const author = byOwner
    ? 'the owner'
    : forwarded || (ownerWrites && !elsewhere)
      ? FORWARD_AUTHOR
      : (participant?.split('@')[0] ?? 'someone');
  return { quoted: { text: body.text, author, authorIsOwner: byOwner } };
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

/**
 * What the agent reads for one content, and the content's own context (forward mark, quote, mentions).
 * Every kind states its context, so none loses its forward mark: only a bare `conversation` has none, and
 * a forward is never one (the mark needs a context).
 */
type Body =
  | { text: string; bare: true }
  | { text: string; bare: false; contextInfo: proto.IContextInfo | null | undefined };

const withCaption = (placeholder: string, caption: string | null | undefined) =>
  caption?.trim() ? `${placeholder} ${caption}` : placeholder;

/**
 * Text, or a placeholder for what is not text: what the agent reads for a quoted message, and for content
 * the host does not take in as a file (a sticker, a location, a contact, a poll); undefined for the rest.
 */
function describeContent(m: proto.IMessage | undefined): Body | undefined {
  if (!m) return undefined;
  const body = (text: string, contextInfo: proto.IContextInfo | null | undefined): Body => ({
    text,
    bare: false,
    contextInfo,
  });
  if (m.conversation?.trim()) return { text: m.conversation, bare: true };
  const x = m.extendedTextMessage;
  if (x?.text?.trim()) return body(x.text, x.contextInfo);
  if (m.imageMessage) return body(withCaption('[photo]', m.imageMessage.caption), m.imageMessage.contextInfo);
  if (m.videoMessage) {
    const kind = m.videoMessage.gifPlayback ? '[gif]' : '[video]';
    return body(withCaption(kind, m.videoMessage.caption), m.videoMessage.contextInfo);
  }
  if (m.ptvMessage) return body('[video message]', m.ptvMessage.contextInfo);
  if (m.audioMessage)
    return body(m.audioMessage.ptt ? '[voice message]' : '[audio]', m.audioMessage.contextInfo);
  if (m.documentMessage) {
    const d = m.documentMessage;
    const name = d.fileName?.trim() || d.title?.trim();
    return body(withCaption(name ? `[document: ${name}]` : '[document]', d.caption), d.contextInfo);
  }
  if (m.stickerMessage) return body('[sticker]', m.stickerMessage.contextInfo);
  // A location's name and address, a live location's caption and a contact's name are the sender's words.
  if (m.locationMessage) {
    const l = m.locationMessage;
    const name = l.name?.trim() || l.address?.trim();
    return body(withCaption(name ? `[location: ${name}]` : '[location]', l.comment), l.contextInfo);
  }
  if (m.liveLocationMessage) {
    const l = m.liveLocationMessage;
    return body(withCaption('[live location]', l.caption), l.contextInfo);
  }
  if (m.contactMessage) {
    const name = m.contactMessage.displayName?.trim();
    return body(name ? `[contact: ${name}]` : '[contact]', m.contactMessage.contextInfo);
  }
  if (m.contactsArrayMessage) {
    const name = m.contactsArrayMessage.displayName?.trim();
    return body(name ? `[contacts: ${name}]` : '[contacts]', m.contactsArrayMessage.contextInfo);
  }
  const poll = m.pollCreationMessage ?? m.pollCreationMessageV2 ?? m.pollCreationMessageV3;
  if (poll) return body(poll.name?.trim() ? `[poll: ${poll.name}]` : '[poll]', poll.contextInfo);
  return undefined;
}
