import type { ChannelDefinition } from './channel.ts';
import { localChannelDefinition } from './local/local-definition.ts';
import { LOCAL_CHANNEL } from './local/local-names.ts';
import { slackChannelDefinition } from './slack/slack-definition.ts';
import { telegramChannelDefinition } from './telegram/telegram-definition.ts';
import { whatsappChannelDefinition } from './whatsapp/whatsapp-definition.ts';

/** Every channel Carapace knows, in the order `carapace status` shows them. */
export const CHANNEL_DEFINITIONS: readonly ChannelDefinition[] = [
  localChannelDefinition,
  telegramChannelDefinition,
  whatsappChannelDefinition,
  slackChannelDefinition,
] as ChannelDefinition[];

/** Channels that need no config section. */
export const ALWAYS_ON_CHANNELS: readonly string[] = [LOCAL_CHANNEL];
