import { sequentialize } from '@grammyjs/runner';
import { Composer, type Api, type Context } from 'grammy';
import type { Chat } from 'grammy/types';
import type { Logger } from '../../logging/logger.ts';
import type { ChannelHost, ChannelStateStore } from '../channel.ts';
import { TELEGRAM_CHANNEL } from './telegram-config.ts';
import { conversationId, decideInbound, type BotIdentity } from './telegram-inbound.ts';
import { telegramMedia } from './telegram-media.ts';
import { errorMessage } from '../../errors/error-message.ts';

const REFUSAL = 'This is a private assistant: it only talks to its owner here.';

/** Where a chat that became a supergroup went, kept so that sends still aimed at the old id answer "moved". */
export const movedKey = (chatId: string) => `moved:${chatId}`;

export interface TelegramHandlersDeps {
  ownerId: number | undefined;
  state: ChannelStateStore;
  logger: Logger;
  /** The host once the channel started; updates before that are dropped. */
  host(): ChannelHost | undefined;
  /** The bot as getMe described it, once known; updates before that are dropped. */
  identity(): BotIdentity | undefined;
  /** Re-reads the bot's settings (privacy mode) after it joined a group. */
  checkPrivacy(): Promise<void>;
  /** A courtesy reply (refusal, your id): never awaited by a lane, never fatal. */
  tell(chatId: number, text: string): void;
  /** The Bot API's getFile and the URL of a file path it returned (the token is in it: never logged). */
  files: { api: Pick<Api, 'getFile'>; url(filePath: string): string };
  /** Takes the buttons off a message, once (telegram-buttons.ts); never rejects. */
  retractButtons(chatId: number, messageId: number): Promise<boolean>;
}

/**
 * What the bot does with each update, on lanes (@grammyjs/runner's sequentialize): one per chat and one
 * per forum topic, so each conversation is handled in order; the owner's private chat and button presses
 * have a lane of their own, so a decision is never queued behind the turn waiting for it.
 *
 * Edits: an edited message is not a new turn and is not stored again: the agent answers what was sent,
 * and a correction is a new message. (Re-running on edits would answer a typo fix twice.)
 */
export function createTelegramHandlers(deps: TelegramHandlersDeps): Composer<Context> {
  const { ownerId, state, logger, tell } = deps;
  const refused = new Set<number>();
  const handlers = new Composer<Context>();

  function seen(chat: Chat, chatId = String(chat.id)): void {
    if ('title' in chat && chat.title) deps.host()?.onChatSeen({ chatId, title: chat.title });
  }

  const lane = (ctx: Context): string | undefined => {
    if (ctx.callbackQuery) return ctx.from?.id === ownerId ? 'owner' : `press:${ctx.from?.id}`;
    const msg = ctx.message ?? ctx.editedMessage;
    if (msg) return msg.chat.type === 'private' && msg.from?.id === ownerId ? 'owner' : conversationId(msg);
    return ctx.chat ? String(ctx.chat.id) : undefined;
  };
  handlers.use(sequentialize(lane));

  handlers.on('message', async (ctx) => {
    const msg = ctx.message;
    const host = deps.host();
    const bound = deps.identity();
    if (!host || !bound) return;
    if (msg.migrate_to_chat_id !== undefined) {
      // The group became a supergroup: its group follows it now (so messages at the new id are its own),
      // and sends still aimed at the old id answer "moved".
      state.set(movedKey(String(msg.chat.id)), String(msg.migrate_to_chat_id));
      host.onChatMoved(String(msg.chat.id), String(msg.migrate_to_chat_id), 'the group became a supergroup');
      logger.info({ from: msg.chat.id, to: msg.migrate_to_chat_id }, 'group migrated to a supergroup');
      return;
    }
    if (msg.new_chat_title) seen(msg.chat);
    const decision = decideInbound(msg, bound);
    switch (decision.kind) {
      case 'ignore':
        logger.debug({ chatId: msg.chat.id, reason: decision.reason }, 'telegram message ignored');
        return;
      case 'refuse':
        // Never handed to the host, so never stored; one refusal per stranger and process.
        if (!refused.has(decision.userId)) {
          refused.add(decision.userId);
          tell(decision.chatId, REFUSAL);
        }
        logger.info({ userId: decision.userId }, 'private message from someone other than the owner refused');
        return;
      case 'tell-id':
        tell(
          decision.chatId,
          decision.isOwner
            ? `Your Telegram user id is ${decision.userId}. You are this bot's owner: this chat is your admin chat.`
            : decision.ownerUnset
              ? `Your Telegram user id is ${decision.userId}. If this is your bot, put owner_user_id = ${decision.userId} ` +
                'in [channels.telegram] of config.toml and restart Carapace.'
              : `Your Telegram user id is ${decision.userId}. ${REFUSAL}`,
        );
        return;
      case 'ingest': {
        const m = decision.message;
        if (m.chatTitle) host.onChatSeen({ chatId: m.chatId, title: m.chatTitle });
        // Awaited on the chat's lane: the file is fetched before the chat's next message is taken in.
        if (decision.media)
          await host.ingestMedia({
            ...m,
            media: telegramMedia(decision.media, deps.files.api, deps.files.url),
          });
        else host.ingest(m);
        return;
      }
    }
  });

  handlers.on('edited_message', (ctx) => {
    logger.debug({ chatId: ctx.editedMessage.chat.id }, 'edit ignored: an edit is not a new turn');
  });

  handlers.on('callback_query:data', (ctx) => {
    const q = ctx.callbackQuery;
    const fromOwner = q.from.id === ownerId && q.message?.chat.id === ownerId;
    // The toast: what the host did with the press ("Approved", "Already decided"), never the raw command.
    const toast = (text: string) =>
      void ctx
        .answerCallbackQuery({ text })
        .catch((err: unknown) => logger.warn({ err: errorMessage(err) }, 'could not answer a button press'));
    if (!fromOwner) toast('Only the owner can decide this.');
    // One press of the owner's settles the request either way (decided, or already decided or expired, as
    // the host's answer says): its buttons go, so nobody presses a dead one later. Taken off before the
    // host hears of the press, so the host's own retraction for the decision finds it done.
    if (fromOwner && q.message) void deps.retractButtons(q.message.chat.id, q.message.message_id);
    const host = deps.host();
    if (!host || !q.message) {
      if (fromOwner) toast('Not decided: the host is not ready, try again');
      return;
    }
    // The press reaches the host like a typed command from the presser; the host's one owner check
    // decides (and audits a stranger's press). Only platform facts set fromOwner. Ingesting is synchronous:
    // the decision is taken when it returns.
    const result = host.ingest({
      channel: TELEGRAM_CHANNEL,
      chatId: conversationId(q.message),
      externalId: `press:${q.id}`,
      senderId: String(q.from.id),
      senderName: [q.from.first_name, q.from.last_name].filter(Boolean).join(' ') || String(q.from.id),
      text: q.data,
      sentAt: new Date().toISOString(),
      mentionsBot: false,
      repliesToBot: false,
      fromOwner,
      // A button press is the presser's own act.
      origin: { kind: 'own' },
    });
    if (fromOwner) toast(result.commandBrief ?? 'Done');
  });

  handlers.on('my_chat_member', async (ctx) => {
    const { chat, new_chat_member: now } = ctx.myChatMember;
    if (chat.type === 'private') {
      if (chat.id === ownerId && now.status === 'kicked') logger.warn({}, 'the owner blocked the bot');
      return;
    }
    seen(chat);
    if (now.status === 'member' || now.status === 'administrator') {
      logger.info({ chatId: chat.id }, 'the bot was added to a group');
      await deps.checkPrivacy();
    } else if (now.status === 'left' || now.status === 'kicked') {
      logger.warn({ chatId: chat.id }, 'the bot was removed from a group; replies there will fail');
    }
  });

  return handlers;
}
