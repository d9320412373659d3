import { z } from 'zod';
import type { Channel, ChannelDefinition, ChannelDeps, ChatKind } from './channel.ts';

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
  /** A channel's own folder under the data folder, where its login lives (see ChannelDefinition.chatKind). */
  dataDirOf(name: string): string;
}

/**
 * The one list of channels: what `groups add --channel` accepts, how chat ids look, which formatting rules
 * the agent gets, which channels start. An absent `[channels.<name>]` section means "not configured".
 */
export function createChannelRegistry({ definitions, config, alwaysOn, dataDirOf }: ChannelRegistryDeps) {
  const byName = new Map(definitions.map((d) => [d.name, d]));
  const names = () => definitions.map((d) => d.name);
  const isConfigured = (name: string) =>
    byName.has(name) && (alwaysOn.includes(name) || config()[name] !== undefined);
  /** What a chat id names on a configured channel; an unconfigured one knows nothing, so: a group. */
  const chatKind = (channel: string, chatId: string): ChatKind => {
    const d = byName.get(channel);
    if (!d?.chatKind || !isConfigured(channel)) return { kind: 'group' };
    return d.chatKind(chatId, { config: config()[channel], dataDir: dataDirOf(channel) });
  };

  return {
    names,
    definition: (name: string) => byName.get(name),
    isConfigured,
    /** The configured channels that the registry starts (everything but the always-on ones). */
    configured(): ChannelDefinition[] {
      return definitions.filter((d) => !alwaysOn.includes(d.name) && config()[d.name] !== undefined);
    },
    chatKind,
    formattingRules(name: string): string {
      return byName.get(name)?.formattingRules ?? 'Use plain text.';
    },
    /**
     * Checks that a group may be registered on `channel` (with `chatId`, when given); throws ChannelNotConfiguredError
     * (unknown or unconfigured channel, or one not set up for groups yet: WhatsApp unlinked) or a plain Error (a chat id of the wrong shape, the owner's admin chat,
     * a chat the channel never reads), each with the fix.
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
      const kind = chatId === undefined ? undefined : chatKind(channel, chatId);
      if (kind?.kind === 'admin') throw new Error(adminChatRefusal(channel, chatId as string));
      if (kind?.kind === 'unserved') {
        throw new Error(`${channel} chat ${chatId} cannot be a group: ${kind.reason}`);
      }
      // Last, with the chat: a chat that could never be a group says so even before the channel is set up.
      const blocked =
        chatId === undefined
          ? undefined
          : d.registrationBlocked?.({ config: config()[channel], dataDir: dataDirOf(channel) });
      if (blocked) throw new ChannelNotConfiguredError(blocked);
    },
    /** Creates the configured channels; `depsFor` gives each its own state, folder and logger. */
    create(depsFor: (d: ChannelDefinition) => Omit<ChannelDeps<unknown>, 'config'>): Channel[] {
      return this.configured().map((d) => d.create({ ...depsFor(d), config: config()[d.name] }));
    },
  };
}

export type ChannelRegistry = ReturnType<typeof createChannelRegistry>;

/** Why the owner's admin chat is not registered as a group: it already is the admin conversation. */
export function adminChatRefusal(channel: string, chatId: string): string {
  return (
    `${channel} chat ${chatId} already is the admin conversation: what you write there reaches the admin ` +
    'group, with its approvals and commands. Register a different chat as a group.'
  );
}
