import fs from 'node:fs';
import type { Logger } from '../logging/logger.ts';
import type { Clock } from '../time/clock.ts';
import type { GroupsStore } from '../store/groups-store.ts';
import type { ChatsSeenStore } from '../store/chats-seen-store.ts';
import type { OutboxStore } from '../store/outbox-store.ts';
import type { Channel, ChannelHost, ChannelStateStore, ChannelStatus } from './channel.ts';
import type { ChannelRegistry } from './registry.ts';
import { rememberChatSeen } from './chat-seen.ts';

export interface ConfiguredChannelsDeps {
  /** The channel's own folder under the data folder (created here, owner-only). */
  dataDirOf(name: string): string;
  secret(name: string): string | undefined;
  state(name: string): ChannelStateStore;
  assistantName: string;
  /** The host's clock, handed to each adapter for its own timers. */
  clock: Clock;
  logger: Logger;
}

/** The channels config.toml enables, each with its own data folder, state and logger. */
export function createConfiguredChannels(
  registry: ChannelRegistry,
  deps: ConfiguredChannelsDeps,
  only?: string,
): Channel[] {
  return registry.create((label) => {
    const dataDir = deps.dataDirOf(label);
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    return {
      secret: deps.secret,
      state: deps.state(label),
      dataDir,
      logger: deps.logger.child({ channel: label }),
      assistantName: deps.assistantName,
      clock: deps.clock,
    };
  }, only);
}

export interface StartChannelsDeps {
  store: {
    groups: Pick<GroupsStore, 'findByChat'>;
    chatsSeen: Pick<ChatsSeenStore, 'seen'>;
    outbox: Pick<OutboxStore, 'isOwnMessage'>;
  };
  ingest: ChannelHost['ingest'];
  ingestMedia: ChannelHost['ingestMedia'];
  /** The last status each channel reported (read by status, doctor and the config health check). */
  statuses: Map<string, ChannelStatus>;
  /** A channel's state changed from `before` (the owner hears of losses). */
  onStatusChanged(ch: Channel, before: ChannelStatus['state'] | undefined, status: ChannelStatus): void;
  onChatMoved(channel: string, from: string, to: string, reason: string): void;
  /** Called before each start, so a half-started channel (a connection, a timer) is still stopped. */
  registerStop(name: string, stop: () => Promise<void>): void;
  /** Names the step a failure belongs to (`starting the <name> channel`). */
  onStep(step: string): void;
  logger: Logger;
}

/** What the host offers one channel: its inbound sinks and the reports it makes back. */
export function channelHostFor(ch: Channel, deps: StartChannelsDeps): ChannelHost {
  const log = deps.logger.child({ channel: ch.name });
  return {
    ingest: deps.ingest,
    ingestMedia: deps.ingestMedia,
    onStatus: (status) => {
      const before = deps.statuses.get(ch.name)?.state;
      deps.statuses.set(ch.name, status);
      log.info({ status }, 'channel status');
      deps.onStatusChanged(ch, before, status);
    },
    onChatSeen: (chat) => rememberChatSeen(deps.store, ch, chat),
    isOwnMessage: (chatId, platformId) => deps.store.outbox.isOwnMessage(ch.name, chatId, platformId),
    onChatMoved: (from, to, reason) => deps.onChatMoved(ch.name, from, to, reason),
  };
}

/** Starts the channels one after another, in order; the first that fails stops the start. */
export async function startChannels(channels: Iterable<Channel>, deps: StartChannelsDeps): Promise<void> {
  for (const ch of channels) {
    const host = channelHostFor(ch, deps);
    deps.onStep(`starting the ${ch.name} channel`);
    // Registered before it starts: a channel that fails half-way may already hold a connection or timer.
    deps.registerStop(ch.name, () => ch.stop());
    await ch.start(host);
  }
}
