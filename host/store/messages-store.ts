import type { Db } from './open-database.ts';

export interface StoredMessage {
  id: number;
  groupId: string;
  channel: string;
  chatId: string;
  externalId: string;
  senderId: string;
  senderName: string;
  text: string;
  sentAt: string;
  triggers: boolean;
  /**
   * The owner's own words (owner-check.ts), with nothing forwarded, quoted or transcribed from someone
   * else: recalled from memory unfenced. Left out = not the owner's.
   */
  fromOwner?: boolean;
  /** The file the message carried: where it is stored in the group's folder, or why it is not. */
  media?: MessageMedia;
}

/** A message's file as the host took it in (router/media/media-ingest.ts); stored as JSON. */
export interface MessageMedia {
  kind: string;
  /** The sender's file name (a claim), when they gave one. */
  fileName?: string;
  /** Bytes downloaded (stored), or as the platform declared them (refused before download). */
  bytes?: number;
  durationSec?: number;
  /** The type sniffed from the bytes. */
  mime?: string;
  /** Relative to the group's folder (`media/<date>/<name>`), when stored. */
  path?: string;
  senderId: string;
  status: 'stored' | 'refused';
  /** Why it was refused, or why a stored voice note was not transcribed. */
  reason?: string;
  transcribed?: boolean;
}

export type NewMessage = Omit<StoredMessage, 'id'>;

interface MessageRow {
  id: number;
  group_id: string;
  channel: string;
  chat_id: string;
  external_id: string;
  sender_id: string;
  sender_name: string;
  text: string;
  sent_at: string;
  triggers: number;
  media: string | null;
  from_owner: number;
}

function toMessage(r: MessageRow): StoredMessage {
  return {
    id: r.id,
    groupId: r.group_id,
    channel: r.channel,
    chatId: r.chat_id,
    externalId: r.external_id,
    senderId: r.sender_id,
    senderName: r.sender_name,
    text: r.text,
    sentAt: r.sent_at,
    triggers: r.triggers === 1,
    ...(r.from_owner === 1 ? { fromOwner: true } : {}),
    ...(r.media ? { media: JSON.parse(r.media) as MessageMedia } : {}),
  };
}

export function createMessagesStore(db: Db, now: () => Date = () => new Date()) {
  const insert = db.prepare(
    `INSERT INTO messages (group_id, channel, chat_id, external_id, sender_id, sender_name, text, sent_at, triggers, received_at, media, from_owner)
     VALUES (@groupId, @channel, @chatId, @externalId, @senderId, @senderName, @text, @sentAt, @triggers, @receivedAt, @media, @fromOwner)
     ON CONFLICT (channel, chat_id, external_id) DO NOTHING`,
  );
  // The newest `limit` past the cursor, oldest first: a long backlog keeps its most recent context.
  const after = db.prepare<[string, number, number], MessageRow>(
    `SELECT * FROM (SELECT * FROM messages WHERE group_id = ? AND id > ? ORDER BY id DESC LIMIT ?) ORDER BY id`,
  );
  const exists = db.prepare<[string, string, string], { id: number }>(
    'SELECT id FROM messages WHERE channel = ? AND chat_id = ? AND external_id = ?',
  );
  const latestTrigger = db.prepare<[string, number], { id: number }>(
    'SELECT id FROM messages WHERE group_id = ? AND id > ? AND triggers = 1 ORDER BY id DESC LIMIT 1',
  );
  // Group by group, each one seek in the triggers index: the work follows the groups, not their history.
  const pendingGroups = db.prepare<[], { group_id: string }>(
    `SELECT g.id AS group_id FROM groups g
     WHERE EXISTS (SELECT 1 FROM messages m WHERE m.group_id = g.id AND m.triggers = 1 AND m.id > g.agent_cursor)
     ORDER BY g.id`,
  );

  return {
    /** Stores a message; returns its row id, or undefined when the same message was already stored. */
    insert(m: NewMessage): number | undefined {
      const res = insert.run({
        ...m,
        triggers: m.triggers ? 1 : 0,
        fromOwner: m.fromOwner === true ? 1 : 0,
        receivedAt: now().toISOString(),
        media: m.media ? JSON.stringify(m.media) : null,
      });
      return res.changes === 1 ? Number(res.lastInsertRowid) : undefined;
    },
    /** Whether this platform message is stored already (a redelivered update: its file is not fetched again). */
    has(channel: string, chatId: string, externalId: string): boolean {
      return exists.get(channel, chatId, externalId) !== undefined;
    },
    after(groupId: string, cursor: number, limit = 500): StoredMessage[] {
      return after.all(groupId, cursor, limit).map(toMessage);
    },
    /** The newest triggering message past the cursor, or undefined when the group has nothing to answer. */
    latestTriggerAfter(groupId: string, cursor: number): number | undefined {
      return latestTrigger.get(groupId, cursor)?.id;
    },
    groupsWithPendingTriggers(): string[] {
      return pendingGroups.all().map((r) => r.group_id);
    },
  };
}

export type MessagesStore = ReturnType<typeof createMessagesStore>;
