import { z } from 'zod';
import type { Channel, ChannelDefinition, ChannelStatus } from './channel.ts';
import { formattingRulesFor } from './formatting-rules.ts';

/**
 * Telegram and WhatsApp as the registry knows them until their adapters land (each adapter replaces its
 * entry in channel-definitions.ts with its own definition and schema). Until then a configured section
 * starts a channel that reports "stopped" and dead-letters what is sent to it, so nothing waits forever.
 */
function planned(
  name: string,
  opts: Pick<ChannelDefinition, 'textLimit' | 'chatId' | 'setupHint'>,
): ChannelDefinition<Record<string, unknown>> {
  return {
    name,
    configSchema: z.record(z.string(), z.unknown()),
    formattingRules: formattingRulesFor(name),
    ...opts,
    create(): Channel {
      const status: ChannelStatus = {
        state: 'stopped',
        reason: `the ${name} adapter is not part of this version of Carapace`,
        since: new Date().toISOString(),
      };
      return {
        name,
        textLimit: opts.textLimit,
        formattingRules: formattingRulesFor(name),
        async start(host) {
          host.onStatus(status);
        },
        async stop() {},
        status: () => status,
        async send() {
          return { kind: 'permanent', reason: status.reason as string };
        },
        async setTyping() {},
        adminChatId: () => undefined,
      };
    },
  };
}

export const plannedTelegram = planned('telegram', {
  textLimit: 4096,
  chatId: {
    pattern: /^-?\d{1,20}(\/\d{1,12})?$/,
    example: '-1001234567890 (a forum topic: -1001234567890/42)',
  },
  setupHint:
    'Create a bot with @BotFather, put TELEGRAM_BOT_TOKEN=<token> in <config dir>/.env, add a [channels.telegram] ' +
    'section with owner_user_id = <your numeric Telegram user id> to config.toml, and restart Carapace.',
});

export const plannedWhatsApp = planned('whatsapp', {
  textLimit: 4000,
  chatId: { pattern: /^[0-9-]{5,40}@(g\.us|s\.whatsapp\.net)$/, example: '120363012345678901@g.us' },
  setupHint:
    'Add an empty [channels.whatsapp] section to config.toml, run carapace whatsapp login to link your ' +
    'phone, and restart Carapace.',
});
