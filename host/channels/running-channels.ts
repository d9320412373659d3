import type { Channel, ChannelStatus } from './channel.ts';

/** One running channel as status, the web console and the config reload see it. */
export interface RunningChannelSummary {
  name: string;
  /** Its last reported status (its own answer until it reported one). */
  status: ChannelStatus;
  adminChat: ReturnType<Channel['adminChatId']>;
}

/** The channels the host runs, by name, and the last status each reported. */
export interface RunningChannels {
  add(ch: Channel): void;
  get(name: string): Channel | undefined;
  /** Forgets a stopped channel and its status (an account removed at a reload). */
  remove(name: string): void;
  all(): Iterable<Channel>;
  /** Written by the channels' status reports (`startChannels`), read through `summary`. */
  statuses: Map<string, ChannelStatus>;
  summary(): RunningChannelSummary[];
}

export function createRunningChannels(): RunningChannels {
  const channels = new Map<string, Channel>();
  const statuses = new Map<string, ChannelStatus>();
  return {
    add: (ch) => channels.set(ch.name, ch),
    get: (name) => channels.get(name),
    remove: (name) => {
      channels.delete(name);
      statuses.delete(name);
    },
    all: () => channels.values(),
    statuses,
    summary: () =>
      [...channels.values()].map((ch) => ({
        name: ch.name,
        status: statuses.get(ch.name) ?? ch.status(),
        adminChat: ch.adminChatId(),
      })),
  };
}
