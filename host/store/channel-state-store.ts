import type { ChannelStateStore } from '../channels/channel.ts';
import type { Db } from './open-database.ts';

/** Durable key/value state of one channel (Telegram's update offset), in the host's database. */
export function createChannelStateStore(db: Db, channel: string): ChannelStateStore {
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
