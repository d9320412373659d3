import type { ChannelDefinition, ChannelDeps } from '../channel.ts';
import { createTelegramChannel, TELEGRAM_TEXT_LIMIT } from './telegram-channel.ts';
import { TELEGRAM_CHANNEL, telegramConfigSchema, type TelegramConfig } from './telegram-config.ts';
import { telegramDoctor } from './telegram-doctor.ts';

/** Without the assistant's name every trigger word counts as hidden by privacy mode: warn rather than not. */
const triggerWordOf = (deps: ChannelDeps<TelegramConfig>) => `@${deps.assistantName ?? ''}`;

const tokenOf = (deps: ChannelDeps<TelegramConfig>) => deps.secret(deps.config.bot_token_env);
const webhookSecretOf = (deps: ChannelDeps<TelegramConfig>) =>
  deps.config.webhook ? deps.secret(deps.config.webhook.secret_token_env) : undefined;

/** Telegram in the channel registry: `[channels.telegram]`, the adapter, and its doctor checks. */
export const telegramChannelDefinition: ChannelDefinition<TelegramConfig> = {
  name: TELEGRAM_CHANNEL,
  configSchema: telegramConfigSchema,
  // telegram-format.ts renders these into Telegram's HTML; anything else arrives as the literal characters.
  formattingRules:
    'Telegram: use short paragraphs; *bold*, _italic_, `code`, ```code blocks``` and [links](https://…) work; ' +
    `avoid tables and headings. Messages over ${TELEGRAM_TEXT_LIMIT} characters are split.`,
  capabilities: {
    members: true,
    forwards: true,
    transientSendFailures: true,
    chatMoves: true,
    connectionDrops: true,
    sharedConnection:
      'each Bot API call is its own HTTP request: no send can take a connection the others share',
    retractActions: true,
    reactions: true,
    typing: true,
    unsend: true,
    edits: true,
  },
  chatId: {
    pattern: /^-?\d{1,20}(\/\d{1,12})?$/,
    example: '-1001234567890 (a forum topic: -1001234567890/42)',
  },
  // A private chat's id is the person's user id (positive); groups and supergroups are negative.
  chatKind(chatId, { config }) {
    if (chatId.startsWith('-')) return { kind: 'group' };
    if (Number(chatId) === config.owner_user_id) return { kind: 'admin' };
    return {
      kind: 'unserved',
      reason:
        "Telegram private chats are answered only for the owner (owner_user_id, whose chat is the admin chat); anyone else's is refused. " +
        'Add the bot to a Telegram group with that person instead and register the group.',
    };
  },
  setupHint:
    'Create a bot with @BotFather, put TELEGRAM_BOT_TOKEN=<token> in <config dir>/.env, add a [channels.telegram] ' +
    'section to config.toml (owner_user_id = <your numeric user id>: send /start to the bot to learn it), and ' +
    'restart Carapace. README.md, "Connect Telegram", walks through it.',
  create(deps) {
    const token = tokenOf(deps);
    return createTelegramChannel({
      config: deps.config,
      // An empty token makes getMe fail, which the channel reports as needs-login with the fix.
      token: token ?? '',
      webhookSecret: webhookSecretOf(deps),
      triggerWord: triggerWordOf(deps),
      state: deps.state,
      logger: deps.logger,
      ...(deps.clock ? { clock: deps.clock } : {}),
    });
  },
  doctor: (deps) =>
    telegramDoctor({
      config: deps.config,
      token: tokenOf(deps),
      webhookSecret: webhookSecretOf(deps),
      triggerWord: triggerWordOf(deps),
    }),
};
