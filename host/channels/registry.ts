import { z } from 'zod';
import type { Channel, ChannelDefinition, ChannelDeps } from './channel.ts';

/** Thrown when a channel is used that is unknown or not configured; the message says how to set it up. */
export class ChannelNotConfiguredError extends Error {}

/** `[channels]`: one optional section per channel, each validated by the schema its channel owns. */
export function channelsConfigSchema(definitions: readonly ChannelDefinition[]) {
  return z
    .object(Object.fromEntries(definitions.map((d) => [d.name, d.configSchema.optional()])))
    .strict()
    .default({});
}

export interface ChannelRegistryDeps {
  definitions: readonly ChannelDefinition[];
  /** The parsed `[channels]` sections, read on every call (no values are captured). */
  config(): Record<string, unknown>;
  /** Channels that are there without a config section (the local console). */
  alwaysOn: readonly string[];
}

/**
 * The one list of channels: what `groups add --channel` accepts, how chat ids look, which formatting rules
 * the agent gets, which channels start. An absent `[channels.<name>]` section means "not configured".
 */
export function createChannelRegistry({ definitions, config, alwaysOn }: ChannelRegistryDeps) {
  const byName = new Map(definitions.map((d) => [d.name, d]));
  const names = () => definitions.map((d) => d.name);
  const isConfigured = (name: string) =>
    byName.has(name) && (alwaysOn.includes(name) || config()[name] !== undefined);

  return {
    names,
    definition: (name: string) => byName.get(name),
    isConfigured,
    /** The configured channels that the registry starts (everything but the always-on ones). */
    configured(): ChannelDefinition[] {
      return definitions.filter((d) => !alwaysOn.includes(d.name) && config()[d.name] !== undefined);
    },
    formattingRules(name: string): string {
      return byName.get(name)?.formattingRules ?? 'Use plain text.';
    },
    /**
     * Checks that a group may be registered on `channel` (with `chatId`, when given); throws ChannelNotConfiguredError
     * (unknown or unconfigured channel) or a plain Error (a chat id of the wrong shape), each with the fix.
     */
    checkRegistration(channel: string, chatId?: string): void {
      const d = byName.get(channel);
      if (!d) {
        throw new ChannelNotConfiguredError(
          `there is no channel "${channel}"; use one of: ${names().join(', ')}`,
        );
      }
      if (!isConfigured(channel)) {
        throw new ChannelNotConfiguredError(`the ${channel} channel is not configured. ${d.setupHint}`);
      }
      if (chatId !== undefined && !d.chatId.pattern.test(chatId)) {
        throw new Error(
          `"${chatId}" is not a ${channel} chat id; it looks like ${d.chatId.example} (carapace chats lists the chats that wrote to the bot)`,
        );
      }
    },
    /** Creates the configured channels; `depsFor` gives each its own state, folder and logger. */
    create(depsFor: (d: ChannelDefinition) => Omit<ChannelDeps<unknown>, 'config'>): Channel[] {
      return this.configured().map((d) => d.create({ ...depsFor(d), config: config()[d.name] }));
    },
  };
}

export type ChannelRegistry = ReturnType<typeof createChannelRegistry>;
