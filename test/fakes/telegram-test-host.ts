import path from 'node:path';
import Database from 'better-sqlite3';
import type {
  ChannelHost,
  ChannelStateStore,
  ChannelStatus,
  InboundMessage,
} from '../../host/channels/channel.ts';
import { OFFSET_KEY } from '../../host/channels/telegram/telegram-poller.ts';
import { waitFor } from '../helpers/processes.ts';

/**
 * What a channel sees of the host, recording what it is handed: inbound messages, statuses and chats.
 * The durable state is a real SQLite file, so a "restart" (a new channel on the same file) is real.
 */
export function createRecordingHost() {
  const inbound: InboundMessage[] = [];
  const statuses: ChannelStatus[] = [];
  const chats = new Map<string, string>();
  const moves: { from: string; to: string }[] = [];
  const host: ChannelHost = {
    ingest(m) {
      inbound.push(m);
      return { stored: true, duplicate: false, triggered: true };
    },
    ingestMedia: async (m) => host.ingest(m),
    onStatus: (s) => void statuses.push(s),
    onChatSeen: ({ chatId, title }) => void chats.set(chatId, title),
    isOwnMessage: () => false,
    onChatMoved: (from, to) => void moves.push({ from, to }),
  };
  return { host, inbound, statuses, chats, moves };
}

export function openStateFile(dir: string): ChannelStateStore & { close(): void } {
  const db = new Database(path.join(dir, 'state.db'));
  db.exec('CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
  const get = db.prepare<[string], { value: string }>('SELECT value FROM state WHERE key = ?');
  const set = db.prepare(
    'INSERT INTO state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
  );
  return {
    get: (key) => get.get(key)?.value,
    set: (key, value) => void set.run(key, value),
    close: () => db.close(),
  };
}

/** The platform's channel_state table, scoped to one channel, as the host keeps it. */
export function channelStateIn(db: Database.Database, channel: string): ChannelStateStore {
  const get = db.prepare<[string, string], { value: string }>(
    'SELECT value FROM channel_state WHERE channel = ? AND key = ?',
  );
  const set = db.prepare(
    'INSERT INTO channel_state (channel, key, value) VALUES (?, ?, ?) ON CONFLICT(channel, key) DO UPDATE SET value = excluded.value',
  );
  return {
    get: (key) => get.get(channel, key)?.value,
    set: (key, value) => void set.run(channel, key, value),
  };
}

/**
 * Resolves once the Telegram adapter handled `updateId` and every update before it: its durable offset (the
 * first update not yet handled) moved past it. The sentinel for "nothing more came of those updates".
 */
export async function handledThrough(state: ChannelStateStore, updateId: number): Promise<void> {
  await waitFor(
    'the adapter to handle the update',
    () => Number(state.get(OFFSET_KEY) ?? 0) > updateId,
    5_000,
  );
}
