import { GrammyError, type Bot } from 'grammy';
import type { UserFromGetMe } from 'grammy/types';
import type { Logger } from '../../logging/logger.ts';
import type { ChannelState, ChannelStateStore, ChannelStatus } from '../channel.ts';
import { WEBHOOK_SECRET_PATTERN, type TelegramConfig } from './telegram-config.ts';
import type { BotIdentity } from './telegram-inbound.ts';
import { createPoller, type Poller, ALLOWED_UPDATES } from './telegram-poller.ts';
import { privacyWarning } from './telegram-privacy.ts';
import { createWebhookServer, type WebhookServer } from './telegram-webhook.ts';
import { backoffMs } from '../../time/backoff.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { systemClock, type Clock } from '../../time/clock.ts';
import { sleepOn } from '../../time/clock-timers.ts';

export interface TelegramConnectionDeps {
  /** The bot whose updates are received (its handlers already installed). */
  bot: Bot;
  config: TelegramConfig;
  token: string;
  /** Required in webhook mode. */
  webhookSecret?: string;
  /** The host's trigger word (`@<assistant name>`): privacy mode hides it unless it is the bot's @username. */
  triggerWord: string;
  state: ChannelStateStore;
  logger: Logger;
  /** Every change of status, for the host. */
  onStatus(status: ChannelStatus): void;
  /** Test hooks: how long past the poll timeout the watchdog waits, and the start-up retry pace. */
  watchdogGraceMs?: number;
  retryBaseMs?: number;
  /** The host's clock: start-up retries, the poll's watchdog and backoff, typing renewals, status times. */
  clock?: Clock;
}

/**
 * The bot's connection to Telegram: the token checked by getMe (retried with backoff), then updates
 * received by long polling (with its watchdog) or a webhook, and the status that all of it amounts to,
 * privacy mode's warning riding on `connected`.
 */
export function createTelegramConnection(deps: TelegramConnectionDeps) {
  const { bot, config, state, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const isoNow = () => new Date(clock.now()).toISOString();
  // A stop ends the wait early; the caller then sees the aborted signal.
  const pause = (ms: number, signal: AbortSignal) => sleepOn(clock)(ms, signal).catch(() => undefined);
  let me: UserFromGetMe | undefined;
  let current: ChannelStatus = { state: 'stopped', since: isoNow() };
  let privacyNote: string | undefined;
  let poller: Poller | undefined;
  let webhook: WebhookServer | undefined;
  let starting: AbortController | undefined;
  let connecting: Promise<void> | undefined;

  const identity = (): BotIdentity | undefined =>
    me && { id: me.id, username: me.username, ownerUserId: config.owner_user_id };

  function setStatus(next: ChannelState, reason?: string): void {
    const withNote = reason ?? (next === 'connected' ? privacyNote : undefined);
    if (current.state === next && current.reason === withNote) return;
    current = { state: next, ...(withNote ? { reason: withNote } : {}), since: isoNow() };
    deps.onStatus(current);
  }

  /**
   * Re-reads the bot's settings, since privacy mode may have changed: after the bot joined a group (the
   * owner's fix ends with re-adding it) and when receiving recovered. The status follows either way, so a
   * fixed privacy mode stops being reported without a restart.
   */
  async function checkPrivacy(): Promise<void> {
    const before = privacyNote;
    try {
      const fresh = await bot.api.getMe();
      me = fresh;
      bot.botInfo = fresh;
      privacyNote = privacyWarning(fresh, deps.triggerWord);
    } catch (err) {
      logger.warn({ err: errorMessage(err) }, 'could not re-read the bot settings');
      return;
    }
    if (privacyNote) logger.warn({}, privacyNote);
    else if (before)
      logger.info({}, 'Telegram privacy mode is off now: the bot sees the trigger word in groups');
    // The note rides on the status: the host tells the admin chats, once per distinct warning.
    if (current.state === 'connected') setStatus('connected');
  }

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
            : `cannot reach Telegram: ${errorMessage(err)}`,
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
      logger.info({}, 'deleted the webhook left from webhook mode; polling now');
    }
    if (signal.aborted) return;
    poller = createPoller({
      api: bot.api,
      handle: (u) => bot.handleUpdate(u),
      state,
      pollTimeoutS: config.poll_timeout_s,
      watchdogGraceMs: deps.watchdogGraceMs ?? 15_000,
      onConnected: () => {
        const recovered = current.state !== 'connected';
        setStatus('connected');
        if (recovered) void checkPrivacy();
      },
      onTrouble: (reason) => setStatus('connecting', reason),
      logger,
      clock,
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
    if (privacyNote) logger.warn({}, privacyNote);
    for (let attempt = 1; !signal.aborted; attempt += 1) {
      try {
        if (config.mode === 'webhook' && config.webhook) await receiveByWebhook(config.webhook, signal);
        else await receiveByPolling(signal);
        firstTry();
        return;
      } catch (err) {
        setStatus('connecting', `cannot set up receiving: ${errorMessage(err)}`);
        firstTry();
        const retryBase = deps.retryBaseMs ?? 1_000;
        await pause(
          backoffMs(attempt, { baseMs: retryBase, maxMs: Math.min(60_000, retryBase * 64) }),
          signal,
        );
      }
    }
  }

  return {
    identity,
    checkPrivacy,
    status: () => current,

    /** Resolves after the first try (connected, or its trouble reported); later tries go on behind it. */
    async start(): Promise<void> {
      if (starting) return;
      starting = new AbortController();
      setStatus('connecting');
      let firstTry!: () => void;
      const tried = new Promise<void>((r) => (firstTry = r));
      connecting = connect(starting.signal, firstTry)
        .catch((err: unknown) => {
          logger.error({ err }, 'telegram start failed');
          setStatus('connecting', `start failed: ${errorMessage(err)}`);
        })
        .finally(firstTry);
      await tried;
    },

    /** Whether a start is under way or done (a second start is ignored). */
    started: () => starting !== undefined,

    async stop(): Promise<void> {
      starting?.abort();
      starting = undefined;
      // A start still under way finishes (or gives up) first, so nothing it opens outlives the stop.
      await connecting;
    },

    /** After stop: closes the receiver and reports `stopped`. */
    async close(): Promise<void> {
      await poller?.stop();
      poller = undefined;
      await webhook?.stop();
      webhook = undefined;
      setStatus('stopped');
    },
  };
}
