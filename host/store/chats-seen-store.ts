import type { Db } from './open-database.ts';

export interface SeenChat {
  channel: string;
  chatId: string;
  title: string;
  firstSeenAt: string;
  lastSeenAt: string;
}

/**
 * Chats that wrote to the bot or added it, registered or not: channel, id, title and when, never a word of
 * what they wrote. `carapace chats` lists them so the owner can register one.
 */
export function createChatsSeenStore(db: Db, now: () => Date = () => new Date()) {
  const upsert = db.prepare(
    `INSERT INTO chats_seen (channel, chat_id, title, first_seen_at, last_seen_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (channel, chat_id) DO UPDATE SET title = excluded.title, last_seen_at = excluded.last_seen_at`,
  );
  const all = db.prepare<
    [],
    { channel: string; chat_id: string; title: string; first_seen_at: string; last_seen_at: string }
  >('SELECT * FROM chats_seen ORDER BY last_seen_at DESC, channel, chat_id');
  return {
    seen(channel: string, chatId: string, title: string): void {
      const at = now().toISOString();
      // Titles come from chat members: bounded, one line, so a listing cannot be flooded or forged.
      upsert.run(channel, chatId, title.replace(/\s+/g, ' ').trim().slice(0, 120) || chatId, at, at);
    },
    list(): SeenChat[] {
      return all.all().map((r) => ({
        channel: r.channel,
        chatId: r.chat_id,
        title: r.title,
        firstSeenAt: r.first_seen_at,
        lastSeenAt: r.last_seen_at,
      }));
    },
  };
}

export type ChatsSeenStore = ReturnType<typeof createChatsSeenStore>;
