import { autoRetry } from '@grammyjs/auto-retry';
import { sequentialize } from '@grammyjs/runner';
import { Bot, GrammyError, type Context } from 'grammy';
import type { Chat, UserFromGetMe } from 'grammy/types';
import type { Logger } from 'pino';
import type {
  Channel,
  ChannelHost,
  ChannelState,
  ChannelStateStore,
  ChannelStatus,
  OutboundPiece,
  SendOutcome,
} from '../channel.ts';
import { TELEGRAM_CHANNEL, WEBHOOK_SECRET_PATTERN, type TelegramConfig } from './telegram-config.ts';
import { conversationId, decideInbound, parseConversationId, type BotIdentity } from './telegram-inbound.ts';
import { createPoller, type Poller, ALLOWED_UPDATES } from './telegram-poller.ts';
import { privacyWarning } from './telegram-privacy.ts';
import { sendPiece } from './telegram-send.ts';
import { createWebhookServer, type WebhookServer } from './telegram-webhook.ts';
import { backoffMs } from '../../time/backoff.ts';

export const TELEGRAM_TEXT_LIMIT = 4096;

/** Telegram shows "typing…" for 5 s; renewed a little sooner while a run is active. */
const TYPING_RENEW_MS = 4_000;

const movedKey = (chatId: string) => `moved:${chatId}`;

export interface TelegramChannelDeps {
  config: TelegramConfig;
  token: string;
  /** Required in webhook mode. */
  webhookSecret?: string;
  /** The host's trigger word (`@<assistant name>`): privacy mode hides it unless it is the bot's @username. */
  triggerWord: string;
  state: ChannelStateStore;
  logger: Logger;
  /** Test hooks: how long past the poll timeout the watchdog waits, and the start-up retry pace. */
  watchdogGraceMs?: number;
  retryBaseMs?: number;
}

const REFUSAL = 'This is a private assistant: it only talks to its owner here.';

/**
 * The Telegram adapter on grammY. It translates and nothing else: messages → InboundMessage, pieces →
 * sendMessage → typed outcomes. Lanes (@grammyjs/runner's sequentialize): one per chat and one per forum
 * topic, so each conversation is handled in order; the owner's private chat and button presses have a
 * lane of their own, so a decision is never queued behind the turn waiting for it.
 *
 * Edits: an edited message is not a new turn and is not stored again: the agent answers what was sent,
 * and a correction is a new message. (Re-running on edits would answer a typo fix twice.)
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
  let me: UserFromGetMe | undefined;
  let current: ChannelStatus = { state: 'stopped', since: new Date().toISOString() };
  let privacyNote: string | undefined;
  let poller: Poller | undefined;
  let webhook: WebhookServer | undefined;
  let starting: AbortController | undefined;
  let connecting: Promise<void> | undefined;
  const typing = new Map<string, NodeJS.Timeout>();
  const refused = new Set<number>();
  const ownerId = config.owner_user_id;

  const identity = (): BotIdentity | undefined =>
    me && { id: me.id, username: me.username, ownerUserId: ownerId };

  function setStatus(next: ChannelState, reason?: string): void {
    const withNote = reason ?? (next === 'connected' ? privacyNote : undefined);
    if (current.state === next && current.reason === withNote) return;
    current = { state: next, ...(withNote ? { reason: withNote } : {}), since: new Date().toISOString() };
    host?.onStatus(current);
  }

  /** Courtesy replies (refusal, your id, warnings): never awaited by a lane, never fatal. */
  function tell(chatId: number, text: string): void {
    bot.api
      .sendMessage(chatId, text, { link_preview_options: { is_disabled: true } })
      .catch((err: unknown) =>
        logger.warn({ err: (err as Error).message, chatId }, 'could not send a notice'),
      );
  }

  async function checkPrivacy(): Promise<void> {
    try {
      const fresh = await bot.api.getMe();
      me = fresh;
      bot.botInfo = fresh;
      privacyNote = privacyWarning(fresh, deps.triggerWord);
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'could not re-read the bot settings');
      return;
    }
    if (!privacyNote) return;
    logger.warn(privacyNote);
    // The note rides on the status: the host tells the admin chats, once per distinct warning.
    if (current.state === 'connected') setStatus('connected');
  }

  function seen(chat: Chat, chatId = String(chat.id)): void {
    if ('title' in chat && chat.title) host?.onChatSeen({ chatId, title: chat.title });
  }

  const lane = (ctx: Context): string | undefined => {
    if (ctx.callbackQuery) return ctx.from?.id === ownerId ? 'owner' : `press:${ctx.from?.id}`;
    const msg = ctx.message ?? ctx.editedMessage;
    if (msg) return msg.chat.type === 'private' && msg.from?.id === ownerId ? 'owner' : conversationId(msg);
    return ctx.chat ? String(ctx.chat.id) : undefined;
  };
  bot.use(sequentialize(lane));

  bot.on('message', (ctx) => {
    const msg = ctx.message;
    const bound = identity();
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
        host.ingest(m);
        return;
      }
    }
  });

  bot.on('edited_message', (ctx) => {
    logger.debug({ chatId: ctx.editedMessage.chat.id }, 'edit ignored: an edit is not a new turn');
  });

  bot.on('callback_query:data', (ctx) => {
    const q = ctx.callbackQuery;
    const fromOwner = q.from.id === ownerId && q.message?.chat.id === ownerId;
    ctx
      .answerCallbackQuery({ text: fromOwner ? q.data : 'Only the owner can decide this.' })
      .catch((err: unknown) =>
        logger.warn({ err: (err as Error).message }, 'could not answer a button press'),
      );
    // One press of the owner's settles the request either way (decided, or already decided or expired, as
    // the host's answer says): its buttons go, so nobody presses a dead one later.
    if (fromOwner)
      ctx
        .editMessageReplyMarkup()
        .catch((err: unknown) =>
          logger.warn({ err: (err as Error).message }, 'could not remove the buttons of a decided request'),
        );
    if (!host || !q.message) return;
    // The press reaches the host like a typed command from the presser; the host's one owner check
    // decides (and audits a stranger's press). Only platform facts set fromOwner.
    host.ingest({
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
  });

  bot.on('my_chat_member', async (ctx) => {
    const { chat, new_chat_member: now } = ctx.myChatMember;
    if (chat.type === 'private') {
      if (chat.id === ownerId && now.status === 'kicked') logger.warn('the owner blocked the bot');
      return;
    }
    seen(chat);
    if (now.status === 'member' || now.status === 'administrator') {
      logger.info({ chatId: chat.id }, 'the bot was added to a group');
      await checkPrivacy();
    } else if (now.status === 'left' || now.status === 'kicked') {
      logger.warn({ chatId: chat.id }, 'the bot was removed from a group; replies there will fail');
    }
  });

  bot.catch((err) =>
    logger.error({ err: err.error, updateId: err.ctx.update.update_id }, 'telegram update failed'),
  );

  const pause = (ms: number, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
    });

  /** Until getMe answers: the token is checked and the bot's @username known before anything is received. */
  async function identify(signal: AbortSignal, firstTry: () => void): Promise<boolean> {
    const base = deps.retryBaseMs ?? 1_000;
    for (let attempt = 1; !signal.aborted; attempt += 1) {
      try {
        await bot.init(signal as unknown as Parameters<typeof bot.init>[0]);
        me = bot.botInfo;
        return true;
      } catch (err) {
        if (signal.aborted) return false;
        const rejected = err instanceof GrammyError && (err.error_code === 401 || err.error_code === 404);
        setStatus(
          rejected ? 'needs-login' : 'connecting',
          rejected
            ? `Telegram rejected the bot token: check ${config.bot_token_env}, or send /token to @BotFather for a new one`
            : `cannot reach Telegram: ${(err as Error).message}`,
        );
        firstTry();
        await pause(backoffMs(attempt, { baseMs: base, maxMs: Math.min(60_000, base * 64) }), signal);
      }
    }
    return false;
  }

  async function receiveByWebhook(
    webhookConfig: NonNullable<TelegramConfig['webhook']>,
    signal: AbortSignal,
  ) {
    // Fails closed: without a secret anyone who finds the URL could post updates as anyone.
    if (!deps.webhookSecret || !WEBHOOK_SECRET_PATTERN.test(deps.webhookSecret)) {
      setStatus(
        'needs-login',
        `webhook mode needs a secret token: set ${webhookConfig.secret_token_env} to 16-256 characters of A-Z a-z 0-9 _ -`,
      );
      return;
    }
    const url = new URL(webhookConfig.public_url);
    const server = createWebhookServer({
      listen: webhookConfig.listen,
      path: url.pathname,
      secret: deps.webhookSecret,
      handle: (u) => bot.handleUpdate(u),
      logger,
    });
    await server.start();
    webhook = server;
    if (signal.aborted) return;
    await bot.api.setWebhook(url.href, {
      secret_token: deps.webhookSecret,
      allowed_updates: [...ALLOWED_UPDATES],
    });
    setStatus('connected');
  }

  async function receiveByPolling(signal: AbortSignal) {
    // A webhook left from webhook mode would make every getUpdates fail with 409.
    const info = await bot.api.getWebhookInfo();
    if (info.url) {
      await bot.api.deleteWebhook();
      logger.info('deleted the webhook left from webhook mode; polling now');
    }
    if (signal.aborted) return;
    poller = createPoller({
      api: bot.api,
      handle: (u) => bot.handleUpdate(u),
      state,
      pollTimeoutS: config.poll_timeout_s,
      watchdogGraceMs: deps.watchdogGraceMs ?? 15_000,
      onConnected: () => setStatus('connected'),
      onTrouble: (reason) => setStatus('connecting', reason),
      logger,
    });
    poller.start();
    setStatus('connected');
  }

  async function connect(signal: AbortSignal, firstTry: () => void): Promise<void> {
    if (!deps.token) {
      setStatus(
        'needs-login',
        `${config.bot_token_env} is not set: put the bot token from @BotFather in <config dir>/.env and restart`,
      );
      return;
    }
    if (!(await identify(signal, firstTry)) || !me) return;
    privacyNote = privacyWarning(me, deps.triggerWord);
    if (privacyNote) logger.warn(privacyNote);
    for (let attempt = 1; !signal.aborted; attempt += 1) {
      try {
        if (config.mode === 'webhook' && config.webhook) await receiveByWebhook(config.webhook, signal);
        else await receiveByPolling(signal);
        firstTry();
        return;
      } catch (err) {
        setStatus('connecting', `cannot set up receiving: ${(err as Error).message}`);
        firstTry();
        const retryBase = deps.retryBaseMs ?? 1_000;
        await pause(
          backoffMs(attempt, { baseMs: retryBase, maxMs: Math.min(60_000, retryBase * 64) }),
          signal,
        );
      }
    }
  }

  function stopTyping(chatId: string): void {
    clearInterval(typing.get(chatId));
    typing.delete(chatId);
  }

  return {
    name: TELEGRAM_CHANNEL,
    textLimit: TELEGRAM_TEXT_LIMIT,
    identity,

    async start(h: ChannelHost) {
      if (starting) return;
      host = h;
      starting = new AbortController();
      setStatus('connecting');
      // Resolves after the first try (connected, or its trouble reported); later tries go on behind it.
      let firstTry!: () => void;
      const tried = new Promise<void>((r) => (firstTry = r));
      connecting = connect(starting.signal, firstTry)
        .catch((err: unknown) => {
          logger.error({ err }, 'telegram start failed');
          setStatus('connecting', `start failed: ${(err as Error).message}`);
        })
        .finally(firstTry);
      await tried;
    },

    async stop() {
      starting?.abort();
      starting = undefined;
      // A start still under way finishes (or gives up) first, so nothing it opens outlives the stop.
      await connecting;
      for (const chatId of [...typing.keys()]) stopTyping(chatId);
      await poller?.stop();
      poller = undefined;
      await webhook?.stop();
      webhook = undefined;
      setStatus('stopped');
    },

    status: () => current,

    async send(piece: OutboundPiece): Promise<SendOutcome> {
      const moved = state.get(movedKey(piece.chatId));
      if (moved) return { kind: 'moved', newChatId: moved, reason: 'the group became a supergroup' };
      const outcome = await sendPiece(bot.api, piece);
      if (outcome.kind === 'moved') state.set(movedKey(piece.chatId), outcome.newChatId);
      if (outcome.kind !== 'delivered')
        logger.warn({ chatId: piece.chatId, outcome }, 'telegram send not delivered');
      return outcome;
    },

    async setTyping(chatId: string, on: boolean) {
      stopTyping(chatId);
      if (!on) return;
      let target: ReturnType<typeof parseConversationId>;
      try {
        target = parseConversationId(chatId);
      } catch {
        return;
      }
      const ping = () =>
        bot.api
          .sendChatAction(
            target.chatId,
            'typing',
            target.threadId ? { message_thread_id: target.threadId } : {},
          )
          .catch((err: unknown) => logger.debug({ err: (err as Error).message }, 'typing not shown'));
      void ping();
      const timer = setInterval(ping, TYPING_RENEW_MS);
      timer.unref();
      typing.set(chatId, timer);
    },

    // A private chat's id is the user's id: known from the config, before the owner ever writes. A bot
    // cannot open a chat, so until the owner sent /start once, sends there fail and the outbox says so.
    adminChatId: () => (ownerId === undefined ? undefined : String(ownerId)),
  };
}
