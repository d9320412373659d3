import { GROUP_ID_PATTERN } from '../../container-agent/src/protocol.ts';
import type { Db } from './open-database.ts';
import { errorCode } from '../errors/error-code.ts';

export type NetworkMode = 'full' | 'gateway';

export interface GroupRecord {
  id: string;
  channel: string;
  chatId: string;
  name: string;
  isAdmin: boolean;
  networkMode: NetworkMode;
  agentCursor: number;
  createdAt: string;
  /** Set once a run of the group read untrusted content / secrets; cleared only by the owner. */
  taint: { corruption: boolean; secret: boolean };
}

export interface NewGroup {
  id: string;
  channel: string;
  chatId: string;
  name: string;
  isAdmin: boolean;
  networkMode?: NetworkMode;
}

interface GroupRow {
  id: string;
  channel: string;
  chat_id: string;
  name: string;
  is_admin: number;
  network_mode: NetworkMode;
  agent_cursor: number;
  created_at: string;
  taint_corruption: number;
  taint_secret: number;
}

/** Group ids name folders on disk, so they are restricted to a shape that can never traverse paths. */
export { GROUP_ID_PATTERN };

function toRecord(r: GroupRow): GroupRecord {
  return {
    id: r.id,
    channel: r.channel,
    chatId: r.chat_id,
    name: r.name,
    isAdmin: r.is_admin === 1,
    networkMode: r.network_mode,
    agentCursor: r.agent_cursor,
    createdAt: r.created_at,
    taint: { corruption: r.taint_corruption === 1, secret: r.taint_secret === 1 },
  };
}

export class GroupExistsError extends Error {}

export function createGroupsStore(db: Db, now: () => Date = () => new Date()) {
  const byId = db.prepare<[string], GroupRow>('SELECT * FROM groups WHERE id = ?');
  const byChat = db.prepare<[string, string], GroupRow>(
    'SELECT * FROM groups WHERE channel = ? AND chat_id = ?',
  );
  const all = db.prepare<[], GroupRow>('SELECT * FROM groups ORDER BY id');
  const admins = db.prepare<[], GroupRow>('SELECT * FROM groups WHERE is_admin = 1 ORDER BY created_at, id');
  const insert = db.prepare(
    `INSERT INTO groups (id, channel, chat_id, name, is_admin, network_mode, created_at)
     VALUES (@id, @channel, @chatId, @name, @isAdmin, @networkMode, @createdAt)`,
  );
  const remove = db.prepare('DELETE FROM groups WHERE id = ?');
  const rebind = db.prepare('UPDATE groups SET chat_id = ? WHERE channel = ? AND chat_id = ?');
  // The cursor only moves forward: a late, smaller value from a slow path can never re-open answered messages.
  const advance = db.prepare('UPDATE groups SET agent_cursor = MAX(agent_cursor, ?) WHERE id = ?');
  // Taint only grows here; clearing it is a separate, owner-only operation.
  const taint = db.prepare(
    'UPDATE groups SET taint_corruption = MAX(taint_corruption, ?), taint_secret = MAX(taint_secret, ?) WHERE id = ?',
  );
  const untaint = db.prepare('UPDATE groups SET taint_corruption = 0, taint_secret = 0 WHERE id = ?');

  return {
    get(id: string): GroupRecord | undefined {
      const r = byId.get(id);
      return r && toRecord(r);
    },
    findByChat(channel: string, chatId: string): GroupRecord | undefined {
      const r = byChat.get(channel, chatId);
      return r && toRecord(r);
    },
    /** The admin group: the one conversation every linked admin chat joins (the oldest, should there be two). */
    admin(): GroupRecord | undefined {
      const r = admins.get();
      return r && toRecord(r);
    },
    list(): GroupRecord[] {
      return all.all().map(toRecord);
    },
    add(g: NewGroup): GroupRecord {
      if (!GROUP_ID_PATTERN.test(g.id)) {
        throw new Error(
          `group id "${g.id}" is not valid: use 1-64 lowercase letters, digits, "-" or "_", e.g. "family"`,
        );
      }
      try {
        insert.run({
          id: g.id,
          channel: g.channel,
          chatId: g.chatId,
          name: g.name,
          isAdmin: g.isAdmin ? 1 : 0,
          networkMode: g.networkMode ?? 'gateway',
          createdAt: now().toISOString(),
        });
      } catch (err) {
        if (errorCode(err)?.startsWith('SQLITE_CONSTRAINT')) {
          throw new GroupExistsError(
            `a group with id "${g.id}" or chat ${g.channel}:${g.chatId} already exists`,
          );
        }
        throw err;
      }
      return this.get(g.id) as GroupRecord;
    },
    remove(id: string): boolean {
      return remove.run(id).changes > 0;
    },
    /** The platform moved a chat (a Telegram group became a supergroup): its group follows it. */
    rebindChat(channel: string, fromChatId: string, toChatId: string): GroupRecord | undefined {
      if (rebind.run(toChatId, channel, fromChatId).changes === 0) return undefined;
      return this.findByChat(channel, toChatId);
    },
    advanceCursor(id: string, through: number): void {
      advance.run(through, id);
    },
    markTainted(id: string, t: { corruption: boolean; secret: boolean }): void {
      taint.run(t.corruption ? 1 : 0, t.secret ? 1 : 0, id);
    },
    clearTaint(id: string): boolean {
      return untaint.run(id).changes > 0;
    },
  };
}

export type GroupsStore = ReturnType<typeof createGroupsStore>;
