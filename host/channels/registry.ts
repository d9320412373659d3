import { z } from 'zod';
import { withAccountDefaults } from './account-defaults.ts';
import { accountLabel, channelAccountsSchema } from './channel-accounts.ts';
import type { Channel, ChannelDefinition, ChannelDeps, ChatKind } from './channel.ts';

/** Thrown when a channel is used that is unknown or not configured; the message says how to set it up. */
export class ChannelNotConfiguredError extends Error {}

/**
 * `[channels]`: one optional section per channel, each validated by the schema its channel owns, parsed to
 * one entry per account under its label (channel-accounts.ts): `telegram` for the default account (today's
 * single table), `telegram.work` for `[channels.telegram.work]`. The label is the running channel's name,
 * so a named account's groups, outbox rows and state are its own while the default account's stay as they
 * were: two bots that both see chat -100123 hold two groups, `telegram/-100123` and `telegram.work/-100123`.
 */
export function channelsConfigSchema(
  definitions: readonly ChannelDefinition[],
  alwaysOn: readonly string[] = [],
) {
  const sectionOf = (d: ChannelDefinition) =>
    alwaysOn.includes(d.name)
      ? d.configSchema.transform((c) => ({ default: c }))
      : channelAccountsSchema(d.name, withAccountDefaults(d.configSchema), settingsKeysOf(d.configSchema));
  return z
    .object(Object.fromEntries(definitions.map((d) => [d.name, sectionOf(d).optional()])))
    .strict()
    .transform((sections) => {
      const out: Record<string, unknown> = {};
      for (const [channel, accounts] of Object.entries(sections)) {
        if (accounts === undefined) continue;
        for (const [name, settings] of Object.entries(accounts as Record<string, unknown>))
          out[accountLabel({ channel, name })] = settings;
      }
      return out;
    })
    .default({});
}

/** One account's own keys (a table under one is a setting, never an account). */
function settingsKeysOf(schema: z.ZodType): string[] {
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

/** The channel an account label belongs to: `telegram` for both `telegram` and `telegram.work`. */
export function channelOfAccount(label: string): string {
  return label.split('.')[0] ?? label;
}

/**
 * A named account's channel: the adapter as its definition made it, renamed to the account's label, with
 * what it ingests carried under that label, so its groups, replies and state are the account's own.
 */
function asAccount(ch: Channel, label: string): Channel {
  if (ch.name === label) return ch;
  return {
    ...ch,
    name: label,
    start: (host) =>
      ch.start({
        ...host,
        ingest: (m) => host.ingest({ ...m, channel: label }),
        ingestMedia: (m) => host.ingestMedia({ ...m, channel: label }),
      }),
  };
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
  const byChannel = new Map(definitions.map((d) => [d.name, d]));
  /** The definition behind a channel or account label (`telegram.work` is Telegram's). */
  const byName = {
    get: (name: string) => byChannel.get(channelOfAccount(name)),
    has: (name: string) => byChannel.has(channelOfAccount(name)),
  };
  /** The named accounts configured now, after the channels (`telegram`, …, `telegram.work`). */
  const accountLabels = () => Object.keys(config()).filter((k) => k.includes('.') && byName.has(k));
  const names = () => [...definitions.map((d) => d.name), ...accountLabels()];
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
    /** The configured accounts that the registry starts (everything but the always-on channels), by label. */
    configured(): { label: string; definition: ChannelDefinition }[] {
      return Object.keys(config()).flatMap((label) => {
        const definition = byName.get(label);
        return definition && !alwaysOn.includes(definition.name) ? [{ label, definition }] : [];
      });
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
    /** Creates one channel per configured account (or only the one named); `depsFor` gives each its own state, folder and logger. */
    create(depsFor: (label: string) => Omit<ChannelDeps<unknown>, 'config'>, only?: string): Channel[] {
      const accounts = this.configured().filter(({ label }) => only === undefined || label === only);
      return accounts.map(({ label, definition }) =>
        asAccount(definition.create({ ...depsFor(label), config: config()[label] }), label),
      );
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
