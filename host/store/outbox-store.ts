import crypto from 'node:crypto';
import { z } from 'zod';
import type { Db } from './open-database.ts';

/** A button on a piece: pressing it sends `command` as the presser (OutboundPiece.actions). */
export interface OutboxAction {
  label: string;
  command: string;
}

export interface OutboxItem {
  id: number;
  idempotencyKey: string;
  /**
   * What the channel gets as the piece's key: derived from the install's secret and the idempotency key when
   * the piece is stored, so it is unique to this install (and to each restore of it) and the same at every
   * re-send of the piece. WhatsApp derives the message id from it.
   */
  sendKey: string;
  groupId: string | null;
  channel: string;
  chatId: string;
  runId: number | null;
  text: string;
  actions?: OutboxAction[];
  attachment?: OutboxAttachment;
  /**
   * `dead`: a permanent failure (chat gone, no such channel) or a poison piece (its sends kept taking the
   * connection down); kept with its reason, never retried.
   */
  status: OutboxStatus;
  attempts: number;
  /** Attempts whose send took the channel's connection down with it (the server closed the socket on it). */
  connectionDrops: number;
  nextAttemptAt: number;
  lastError: string | null;
}

export type OutboxStatus = 'pending' | 'sent' | 'dead';

export interface NewOutboxItem {
  idempotencyKey: string;
  groupId: string | null;
  channel: string;
  chatId: string;
  runId: number | null;
  text: string;
  /** Buttons (approval requests); kept on the last piece when the text is split. */
  actions?: OutboxAction[];
  /** A file sent as a piece of its own after the text (what channels send as an OutboundAttachment). */
  attachment?: OutboxAttachment;
}

/** The data folder's folder of OutboxAttachment copies (host-only, 0700), carried by backups. */
export const OUTBOX_FILES_FOLDER = 'outbox-files';

/** A host-only copy of a file a reply sends, with its name, sniffed type and how it is shown. */
export interface OutboxAttachment {
  path: string;
  fileName: string;
  mime: string;
  /** The copy's size (absent on pieces stored before it was recorded). */
  bytes?: number;
  kind: 'photo' | 'voice' | 'document';
}

interface OutboxRow {
  id: number;
  idempotency_key: string;
  send_key: string | null;
  group_id: string | null;
  channel: string;
  chat_id: string;
  run_id: number | null;
  text: string;
  actions: string | null;
  attachment: string | null;
  status: OutboxStatus;
  attempts: number;
  connection_drops: number;
  next_attempt_at: number;
  last_error: string | null;
}

/** A piece's buttons as stored (JSON in `outbox.actions`). */
const actionsSchema = z.array(z.object({ label: z.string(), command: z.string() }));

function toItem(r: OutboxRow): OutboxItem {
  return {
    id: r.id,
    idempotencyKey: r.idempotency_key,
    sendKey: r.send_key ?? r.idempotency_key,
    groupId: r.group_id,
    channel: r.channel,
    chatId: r.chat_id,
    runId: r.run_id,
    text: r.text,
    ...(r.actions ? { actions: actionsSchema.parse(JSON.parse(r.actions)) } : {}),
    ...(r.attachment ? { attachment: JSON.parse(r.attachment) as OutboxAttachment } : {}),
    status: r.status,
    attempts: r.attempts,
    connectionDrops: r.connection_drops,
    nextAttemptAt: r.next_attempt_at,
    lastError: r.last_error,
  };
}

/** A piece's send key: the install's secret keys an HMAC of its idempotency key (hex, 64 characters). */
function sendKeyFor(secret: string, idempotencyKey: string): string {
  return crypto.createHmac('sha256', secret).update(idempotencyKey).digest('hex');
}

export function createOutboxStore(db: Db, now: () => Date = () => new Date()) {
  const insert = db.prepare(
    `INSERT INTO outbox (idempotency_key, send_key, group_id, channel, chat_id, run_id, text, actions, attachment, next_attempt_at, created_at)
     VALUES (@idempotencyKey, @sendKey, @groupId, @channel, @chatId, @runId, @text, @actions, @attachment, @nextAttemptAt, @createdAt)
     ON CONFLICT (idempotency_key) DO NOTHING`,
  );
  // Read at each insert, not once: `carapace restore` gives the database a new secret while no host runs.
  const secret = db.prepare<[], { secret: string }>('SELECT secret FROM install_secret WHERE id = 1');
  // A row waits while an older row of the same chat is still backing off: replies never overtake.
  // INDEXED BY: left to itself the planner walks every row ever sent in id order to skip the sort.
  const due = db.prepare<{ now: number; limit: number }, OutboxRow>(
    `SELECT * FROM outbox o INDEXED BY outbox_pending
     WHERE o.status = 'pending' AND o.next_attempt_at <= @now
       AND NOT EXISTS (SELECT 1 FROM outbox p
                       WHERE p.status = 'pending' AND p.channel = o.channel AND p.chat_id = o.chat_id
                         AND p.id < o.id AND p.next_attempt_at > @now)
     ORDER BY o.id LIMIT @limit`,
  );
  // Must agree with `due`: only the oldest pending row of a chat can become due first, so a row held back
  // behind a retrying one never reports a time in the past (the dispatcher would wake at once and spin).
  const nextDue = db.prepare<[], { at: number | null }>(
    `SELECT MIN(o.next_attempt_at) AS at FROM outbox o
     WHERE o.status = 'pending'
       AND NOT EXISTS (SELECT 1 FROM outbox p
                       WHERE p.status = 'pending' AND p.channel = o.channel AND p.chat_id = o.chat_id
                         AND p.id < o.id)`,
  );
  const sent = db.prepare(
    `UPDATE outbox SET status = 'sent', sent_at = ?, attempts = attempts + 1 WHERE id = ?`,
  );
  const failed = db.prepare(
    `UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE id = ? AND status = 'pending'`,
  );
  const dropped = db.prepare(
    `UPDATE outbox SET attempts = attempts + 1, connection_drops = connection_drops + 1, next_attempt_at = ?,
       last_error = ? WHERE id = ? AND status = 'pending'`,
  );
  // INDEXED BY, as for `due`: the pending rows, sorted, rather than every row ever sent in id order.
  const failing = db.prepare<[number], OutboxRow>(
    `SELECT * FROM outbox INDEXED BY outbox_pending WHERE status = 'pending' AND attempts > 0 ORDER BY id LIMIT ?`,
  );
  const dead = db.prepare(
    `UPDATE outbox SET status = 'dead', attempts = attempts + 1, connection_drops = connection_drops + ?,
       last_error = ? WHERE id = ? AND status = 'pending'`,
  );
  const deadForGroup = db.prepare(
    `UPDATE outbox SET status = 'dead', last_error = ? WHERE group_id = ? AND status = 'pending'`,
  );
  const platformId = db.prepare(
    `INSERT INTO outbox_platform_ids (channel, chat_id, platform_id, outbox_id, position) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT DO NOTHING`,
  );
  const ownMessage = db.prepare<[string, string, string], { n: number }>(
    'SELECT 1 AS n FROM outbox_platform_ids WHERE channel = ? AND chat_id = ? AND platform_id = ?',
  );
  const platformIdsOf = db.prepare<[number], { platform_id: string }>(
    'SELECT platform_id FROM outbox_platform_ids WHERE outbox_id = ? ORDER BY position',
  );
  // The key's own row, its pieces (`<key>#<n>`) and its copies in other chats (`<key>@<chat>`): one range of
  // the key's unique index (every suffix starts with a character below DEL).
  const keyRange = db.prepare<
    { from: string; to: string },
    { id: number; idempotencyKey: string; channel: string; chatId: string }
  >(
    `SELECT id, idempotency_key AS idempotencyKey, channel, chat_id AS chatId FROM outbox
     WHERE idempotency_key >= @from AND idempotency_key < @to AND status = 'sent' AND actions IS NOT NULL`,
  );
  const keyRangeAny = db.prepare<
    { from: string; to: string },
    { id: number; idempotencyKey: string; channel: string; chatId: string }
  >(
    `SELECT id, idempotency_key AS idempotencyKey, channel, chat_id AS chatId FROM outbox
     WHERE idempotency_key >= @from AND idempotency_key < @to AND status = 'sent'`,
  );
  /** The delivered pieces under `key` (the key itself, `<key>#<n>`, `<key>@<chat>`), with their last message. */
  const deliveredUnder = (rows: typeof keyRangeAny, key: string) =>
    rows
      .all({ from: key, to: `${key}\u007f` })
      .filter((r) => r.idempotencyKey === key || /^[#@]/.test(r.idempotencyKey.slice(key.length)))
      .flatMap((r) => {
        const platformId = platformIdsOf.all(r.id).at(-1)?.platform_id;
        return platformId === undefined ? [] : [{ channel: r.channel, chatId: r.chatId, platformId }];
      });
  const byKey = db.prepare<[string], { id: number }>('SELECT id FROM outbox WHERE idempotency_key = ?');
  const movePending = db.prepare(
    `UPDATE outbox SET chat_id = ?, next_attempt_at = ? WHERE channel = ? AND chat_id = ? AND status = 'pending'`,
  );
  const deadRows = db.prepare<[number], OutboxRow>(
    `SELECT * FROM outbox WHERE status = 'dead' ORDER BY id DESC LIMIT ?`,
  );
  const sentAfter = db.prepare<[string, string, number], OutboxRow>(
    `SELECT * FROM outbox WHERE channel = ? AND chat_id = ? AND status = 'sent' AND id > ? ORDER BY id`,
  );
  const pendingForChat = db.prepare<[string, string], { n: number }>(
    `SELECT COUNT(*) AS n FROM outbox WHERE channel = ? AND chat_id = ? AND status = 'pending'`,
  );
  const deadTotal = db.prepare<[], { n: number }>(`SELECT COUNT(*) AS n FROM outbox WHERE status = 'dead'`);
  const pendingTotal = db.prepare<[], { n: number }>(
    `SELECT COUNT(*) AS n FROM outbox WHERE status = 'pending'`,
  );
  const maxId = db.prepare<[string, string], { id: number | null }>(
    'SELECT MAX(id) AS id FROM outbox WHERE channel = ? AND chat_id = ?',
  );

  return {
    /** Adds a reply; a second add with the same idempotency key is a no-op (returns false). */
    add(item: NewOutboxItem): boolean {
      const installSecret = secret.get()?.secret;
      if (!installSecret)
        throw new Error('the database has no install secret (table install_secret is empty)');
      return (
        insert.run({
          ...item,
          sendKey: sendKeyFor(installSecret, item.idempotencyKey),
          actions: item.actions?.length ? JSON.stringify(item.actions) : null,
          attachment: item.attachment ? JSON.stringify(item.attachment) : null,
          nextAttemptAt: now().getTime(),
          createdAt: now().toISOString(),
        }).changes === 1
      );
    },
    /** Adds the pieces of one reply in one transaction, so they are stored in order or not at all. */
    addAll(items: NewOutboxItem[]): number {
      return db.transaction(() => items.filter((i) => this.add(i)).length)();
    },
    due(limit = 100): OutboxItem[] {
      return due.all({ now: now().getTime(), limit }).map(toItem);
    },
    nextDueAt(): number | undefined {
      return nextDue.get()?.at ?? undefined;
    },
    /** Marks a piece delivered and keeps the platform's ids of what it became, in one transaction. */
    markSent(id: number, delivered?: { channel: string; chatId: string; platformIds: string[] }): void {
      db.transaction(() => {
        sent.run(now().toISOString(), id);
        delivered?.platformIds.forEach((pid, i) =>
          platformId.run(delivered.channel, delivered.chatId, pid, id, i),
        );
      })();
    },
    /**
     * Records a reply that is already on the platform (a streamed draft edited into it): stored as sent
     * with its platform ids in one transaction, so no dispatcher, before or after a restart, sends it.
     * False (nothing changed) when the key was stored before.
     */
    addDelivered(item: NewOutboxItem, platformIds: string[]): boolean {
      return db.transaction(() => {
        if (!this.add(item)) return false;
        const row = byKey.get(item.idempotencyKey);
        if (row) this.markSent(row.id, { channel: item.channel, chatId: item.chatId, platformIds });
        return true;
      })();
    },
    /** A permanent failure or a poison piece: it stays with its reason and is never attempted again. */
    markDead(id: number, reason: string, opts: { connectionDropped?: boolean } = {}): void {
      dead.run(opts.connectionDropped ? 1 : 0, reason.slice(0, 500), id);
    },
    /** A removed group's undelivered pieces: never sent, kept with the reason. Returns how many. */
    dropForGroup(groupId: string, reason: string): number {
      return deadForGroup.run(reason.slice(0, 500), groupId).changes;
    },
    /** Whether the host sent this platform message id in this chat. */
    isOwnMessage(channel: string, chatId: string, platformIdOfMessage: string): boolean {
      return ownMessage.get(channel, chatId, platformIdOfMessage) !== undefined;
    },
    platformIds(id: number): string[] {
      return platformIdsOf.all(id).map((r) => r.platform_id);
    },
    /**
     * The delivered pieces with buttons that the notice under `key` became, in every chat it went to (the
     * key itself, `<key>#<n>` and `<key>@<chat>`), each with the platform id of the message holding them.
     */
    deliveredWithActions(key: string): { channel: string; chatId: string; platformId: string }[] {
      // The last message of a piece carries its buttons.
      return deliveredUnder(keyRange, key);
    },
    /** The delivered pieces the message under `key` became, each with the platform id of its last message. */
    delivered(key: string): { channel: string; chatId: string; platformId: string }[] {
      return deliveredUnder(keyRangeAny, key);
    },
    /** Moves the pending pieces of a chat that the platform moved to a new id; they are due at once. */
    movePending(channel: string, fromChatId: string, toChatId: string): number {
      return movePending.run(toChatId, now().getTime(), channel, fromChatId).changes;
    },
    deadCount(): number {
      return deadTotal.get()?.n ?? 0;
    },
    /** The newest dead-lettered pieces, for `carapace doctor`. */
    deadLetters(limit = 20): OutboxItem[] {
      return deadRows.all(limit).map(toItem);
    },
    markFailed(id: number, error: string, retryAt: number): void {
      failed.run(retryAt, error.slice(0, 500), id);
    },
    /** A failed attempt whose send took the connection down: counted apart, so a poison piece can be told. */
    markConnectionDropped(id: number, error: string, retryAt: number): void {
      dropped.run(retryAt, error.slice(0, 500), id);
    },
    /** Pending pieces that failed at least once, oldest first: what `carapace status` names as failing. */
    failing(limit = 5): OutboxItem[] {
      return failing.all(limit).map(toItem);
    },
    sentAfter(channel: string, chatId: string, afterId: number): OutboxItem[] {
      return sentAfter.all(channel, chatId, afterId).map(toItem);
    },
    pendingCount(channel?: string, chatId?: string): number {
      if (channel !== undefined && chatId !== undefined) return pendingForChat.get(channel, chatId)?.n ?? 0;
      return pendingTotal.get()?.n ?? 0;
    },
    highWater(channel: string, chatId: string): number {
      return maxId.get(channel, chatId)?.id ?? 0;
    },
  };
}

export type OutboxStore = ReturnType<typeof createOutboxStore>;
