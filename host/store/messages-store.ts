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
  };
}

export function createMessagesStore(db: Db, now: () => Date = () => new Date()) {
  const insert = db.prepare(
    `INSERT INTO messages (group_id, channel, chat_id, external_id, sender_id, sender_name, text, sent_at, triggers, received_at)
     VALUES (@groupId, @channel, @chatId, @externalId, @senderId, @senderName, @text, @sentAt, @triggers, @receivedAt)
     ON CONFLICT (channel, chat_id, external_id) DO NOTHING`,
  );
  // The newest `limit` past the cursor, oldest first: a long backlog keeps its most recent context.
  const after = db.prepare<[string, number, number], MessageRow>(
    `SELECT * FROM (SELECT * FROM messages WHERE group_id = ? AND id > ? ORDER BY id DESC LIMIT ?) ORDER BY id`,
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
      const res = insert.run({ ...m, triggers: m.triggers ? 1 : 0, receivedAt: now().toISOString() });
      return res.changes === 1 ? Number(res.lastInsertRowid) : undefined;
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
