import { z } from 'zod';

export const TELEGRAM_CHANNEL = 'telegram';
export const TELEGRAM_API_ROOT = 'https://api.telegram.org';

/** Only loopback: the webhook listener sits behind the owner's reverse proxy, never open on the LAN. */
const loopbackListen = z
  .string()
  .regex(
    /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\]):\d{1,5}$/,
    'must be a loopback address with a port, e.g. "127.0.0.1:8443"; put a reverse proxy with TLS in front',
  );

/** `ack_reaction`: an emoji, or `false` for no acknowledgement. Shared with WhatsApp's config. */
export const ackReaction = z
  .union([z.literal(false), z.string().trim().min(1, 'must be an emoji, or false to turn it off').max(16)])
  .default('👀');

/**
 * `[channels.telegram]`. The token itself never sits in config: `bot_token_env` names the variable that
 * holds it (the environment or `<config dir>/.env`).
 */
export const telegramConfigSchema = z
  .object({
    bot_token_env: z
      .string()
      .regex(/^[A-Z_][A-Z0-9_]*$/, 'must be the NAME of an environment variable, e.g. TELEGRAM_BOT_TOKEN')
      .default('TELEGRAM_BOT_TOKEN'),
    /**
     * The owner's numeric Telegram user id: their private chat with the bot is an admin chat. Until it is
     * set, nobody is the owner on Telegram, and /start in a private chat tells you your id.
     */
    owner_user_id: z
      .number()
      .int()
      .positive('must be your numeric Telegram user id (send /start to the bot)')
      .optional(),
    /** A self-hosted Bot API server or a test server. */
    api_root: z.url({ protocol: /^https?$/ }).default(TELEGRAM_API_ROOT),
    mode: z.enum(['polling', 'webhook']).default('polling'),
    /** Long-poll timeout of one getUpdates call, in seconds. */
    poll_timeout_s: z.number().int().min(1).max(50).default(30),
    /** Longest 429 `retry_after` honoured in place; longer ones go back to the outbox's own backoff. */
    max_retry_after_s: z.number().int().min(1).max(600).default(30),
    /**
     * The reaction put on a message that triggers a run, so people see at once it was heard; `false` turns
     * it off. Telegram accepts only the emoji of its reaction list (👀 👍 🤔 ✍ …).
     */
    ack_reaction: ackReaction,
    webhook: z
      .object({
        listen: loopbackListen,
        /** The https URL Telegram posts to; your reverse proxy forwards it to `listen`. */
        public_url: z.url({ protocol: /^https?$/ }),
        /** The NAME of the variable holding the secret Telegram sends in X-Telegram-Bot-Api-Secret-Token. */
        secret_token_env: z
          .string()
          .regex(/^[A-Z_][A-Z0-9_]*$/, 'must be the NAME of an environment variable')
          .default('TELEGRAM_WEBHOOK_SECRET'),
      })
      .strict()
      .optional(),
  })
  .strict()
  .refine((c) => c.mode !== 'webhook' || c.webhook !== undefined, {
    message: 'mode = "webhook" needs a [channels.telegram.webhook] section with listen and public_url',
    path: ['webhook'],
  });

export type TelegramConfig = z.infer<typeof telegramConfigSchema>;

/** Telegram's secret_token alphabet and length (1-256 of A-Z a-z 0-9 _ -). */
export const WEBHOOK_SECRET_PATTERN = /^[A-Za-z0-9_-]{16,256}$/;
