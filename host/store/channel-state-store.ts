import type { Db } from './open-database.ts';

/** A channel's own key/value state; the shape channels ask for (`ChannelStateStore` in channels/channel.ts). */
export interface ChannelState {
  get(key: string): string | undefined;
  set(key: string, value: string): void;
}

/** Durable key/value state of one channel (Telegram's update offset), in the host's database. */
export function createChannelStateStore(db: Db, channel: string): ChannelState {
  const read = db.prepare<[string, string], { value: string }>(
    'SELECT value FROM channel_state WHERE channel = ? AND key = ?',
  );
  const write = db.prepare(
    `INSERT INTO channel_state (channel, key, value) VALUES (?, ?, ?)
     ON CONFLICT (channel, key) DO UPDATE SET value = excluded.value`,
  );
  return {
    get: (key) => read.get(channel, key)?.value,
    set: (key, value) => void write.run(channel, key, value),
  };
}
