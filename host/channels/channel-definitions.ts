import type { ChannelDefinition } from './channel.ts';
import { localChannelDefinition } from './local/local-definition.ts';
import { LOCAL_CHANNEL } from './local/local-names.ts';
import { plannedTelegram, plannedWhatsApp } from './planned-channels.ts';

/** Every channel Carapace knows, in the order `carapace status` shows them. Adapters add themselves here. */
export const CHANNEL_DEFINITIONS: readonly ChannelDefinition[] = [
  localChannelDefinition,
  plannedTelegram,
  plannedWhatsApp,
] as ChannelDefinition[];

/** Channels that need no config section. */
export const ALWAYS_ON_CHANNELS: readonly string[] = [LOCAL_CHANNEL];
