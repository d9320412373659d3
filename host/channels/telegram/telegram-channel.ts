import { autoRetry } from '@grammyjs/auto-retry';
import { Bot } from 'grammy';
import type { Channel, ChannelHost, OutboundPiece, SendOutcome } from '../channel.ts';
import { TELEGRAM_CHANNEL } from './telegram-config.ts';
import { createButtonRetraction } from './telegram-buttons.ts';
import { createTelegramConnection, type TelegramConnectionDeps } from './telegram-connection.ts';
import { createTelegramHandlers, movedKey } from './telegram-handlers.ts';
import { parseConversationId, type BotIdentity } from './telegram-inbound.ts';
import { sendPiece } from './telegram-send.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { deleteOwnMessage } from './telegram-delete.ts';
import { editOwnMessage } from './telegram-edit.ts';
import { reactTo } from './telegram-reaction.ts';

export const TELEGRAM_TEXT_LIMIT = 4096;

/** Telegram shows "typing…" for 5 s; the host renews it a little sooner while a run is active. */
const TYPING_RENEW_MS = 4_000;

/** What the adapter needs: the connection's needs, less the bot and the status sink it makes itself. */
export type TelegramChannelDeps = Omit<TelegramConnectionDeps, 'bot' | 'onStatus'>;

/**
 * The Telegram adapter on grammY. It translates and nothing else: messages → InboundMessage, pieces →
 * sendMessage → typed outcomes. This wires the parts: the update handlers (telegram-handlers.ts, a grammY
 * Composer), the connection that receives updates and reports status (telegram-connection.ts), and the
 * sending side (sends, typing, reactions) here.
 */
export function createTelegramChannel(deps: TelegramChannelDeps): Channel & {
  /** For tests and benchmarks: the bot as getMe described it, once started. */
  identity(): BotIdentity | undefined;
} {
  const { config, state, logger } = deps;
  // grammY refuses an empty token; a missing one is reported at start as needs-login with the fix.
  const bot = new Bot(deps.token || '0:missing', { client: { apiRoot: config.api_root } });
  // 429s wait in place when short (a chat's replies keep their order); longer ones, 5xx and network
  // errors go back to their caller's own backoff (the outbox, the poller), which knows the whole picture.
  bot.api.config.use(
    autoRetry({
      maxDelaySeconds: config.max_retry_after_s,
      maxRetryAttempts: 3,
      rethrowHttpErrors: true,
      rethrowInternalServerErrors: true,
    }),
  );

  let host: ChannelHost | undefined;
  const retractButtons = createButtonRetraction({ api: bot.api, logger });
  const ownerId = config.owner_user_id;

  const connection = createTelegramConnection({
    ...deps,
    bot,
    onStatus: (status) => host?.onStatus(status),
  });

  bot.use(
    createTelegramHandlers({
      ownerId,
      state,
      logger,
      host: () => host,
      identity: connection.identity,
      checkPrivacy: connection.checkPrivacy,
      files: { api: bot.api, url: (filePath) => `${config.api_root}/file/bot${deps.token}/${filePath}` },
      retractButtons,
      tell: (chatId, text) => {
        bot.api
          .sendMessage(chatId, text, { link_preview_options: { is_disabled: true } })
          .catch((err: unknown) =>
            logger.warn({ err: errorMessage(err), chatId }, 'could not send a notice'),
          );
      },
    }),
  );
  bot.catch((err) =>
    logger.error({ err: err.error, updateId: err.ctx.update.update_id }, 'telegram update failed'),
  );

  return {
    name: TELEGRAM_CHANNEL,
    textLimit: TELEGRAM_TEXT_LIMIT,
    identity: connection.identity,

    async start(h: ChannelHost) {
      if (connection.started()) return;
      host = h;
      await connection.start();
    },

    async stop() {
      await connection.stop();
      await connection.close();
    },

    status: connection.status,

    async send(piece: OutboundPiece): Promise<SendOutcome> {
      const moved = state.get(movedKey(piece.chatId));
      if (moved) return { kind: 'moved', newChatId: moved, reason: 'the group became a supergroup' };
      const outcome = await sendPiece(bot.api, piece);
      if (outcome.kind === 'moved') state.set(movedKey(piece.chatId), outcome.newChatId);
      if (outcome.kind !== 'delivered')
        logger.warn({ chatId: piece.chatId, outcome }, 'telegram send not delivered');
      return outcome;
    },

    typingRenewMs: TYPING_RENEW_MS,

    // Telegram has no call that takes "typing…" off: it lapses by itself, or at the bot's next message.
    async setTyping(chatId: string, on: boolean) {
      if (!on) return;
      let target: ReturnType<typeof parseConversationId>;
      try {
        target = parseConversationId(chatId);
      } catch {
        return;
      }
      await bot.api
        .sendChatAction(
          target.chatId,
          'typing',
          target.threadId ? { message_thread_id: target.threadId } : {},
        )
        .catch((err: unknown) => logger.debug({ err: errorMessage(err) }, 'typing not shown'));
    },

    acknowledge: (target) => reactTo(bot.api, config.ack_reaction, target, logger),

    unsend: (target) => deleteOwnMessage(bot.api, target, logger),

    editText: (target) => editOwnMessage(bot.api, target, logger),

    async retractActions({ chatId, platformId }) {
      let target: ReturnType<typeof parseConversationId>;
      try {
        target = parseConversationId(chatId);
      } catch {
        return false;
      }
      // Message ids are per chat; a forum topic's messages are the chat's own.
      return retractButtons(target.chatId, Number(platformId));
    },

    // A private chat's id is the user's id: known from the config, before the owner ever writes. A bot
    // cannot open a chat, so until the owner sent /start once, sends there fail and the outbox says so.
    adminChatId: () => (ownerId === undefined ? undefined : String(ownerId)),
  };
}
