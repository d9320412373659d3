import type { Db } from './open-database.ts';

export interface OutboxItem {
  id: number;
  idempotencyKey: string;
  groupId: string | null;
  channel: string;
  chatId: string;
  runId: number | null;
  text: string;
  status: 'pending' | 'sent';
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
}

export interface NewOutboxItem {
  idempotencyKey: string;
  groupId: string | null;
  channel: string;
  chatId: string;
  runId: number | null;
  text: string;
}

interface OutboxRow {
  id: number;
  idempotency_key: string;
  group_id: string | null;
  channel: string;
  chat_id: string;
  run_id: number | null;
  text: string;
  status: 'pending' | 'sent';
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
}

function toItem(r: OutboxRow): OutboxItem {
  return {
    id: r.id,
    idempotencyKey: r.idempotency_key,
    groupId: r.group_id,
    channel: r.channel,
    chatId: r.chat_id,
    runId: r.run_id,
    text: r.text,
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    lastError: r.last_error,
  };
}

export function createOutboxStore(db: Db, now: () => Date = () => new Date()) {
  const insert = db.prepare(
    `INSERT INTO outbox (idempotency_key, group_id, channel, chat_id, run_id, text, next_attempt_at, created_at)
     VALUES (@idempotencyKey, @groupId, @channel, @chatId, @runId, @text, @nextAttemptAt, @createdAt)
     ON CONFLICT (idempotency_key) DO NOTHING`,
  );
  // A row waits while an older row of the same chat is still backing off: replies never overtake.
  const due = db.prepare<{ now: number; limit: number }, OutboxRow>(
    `SELECT * FROM outbox o
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
  const sentAfter = db.prepare<[string, string, number], OutboxRow>(
    `SELECT * FROM outbox WHERE channel = ? AND chat_id = ? AND status = 'sent' AND id > ? ORDER BY id`,
  );
  const pendingForChat = db.prepare<[string, string], { n: number }>(
    `SELECT COUNT(*) AS n FROM outbox WHERE channel = ? AND chat_id = ? AND status = 'pending'`,
  );
  const pendingTotal = db.prepare<[], { n: number }>(
    `SELECT COUNT(*) AS n FROM outbox WHERE status = 'pending'`,
  );
  const maxId = db.prepare<[string, string], { id: number | null }>(
    'SELECT MAX(id) AS id FROM outbox WHERE channel = ? AND chat_id = ?',
  );

  return {
    /** Adds a reply; a second add with the same idempotency key is a no-op (returns false). */
    add(item: NewOutboxItem): boolean {
      return (
        insert.run({ ...item, nextAttemptAt: now().getTime(), createdAt: now().toISOString() }).changes === 1
      );
    },
    due(limit = 100): OutboxItem[] {
      return due.all({ now: now().getTime(), limit }).map(toItem);
    },
    nextDueAt(): number | undefined {
      return nextDue.get()?.at ?? undefined;
    },
    markSent(id: number): void {
      sent.run(now().toISOString(), id);
    },
    markFailed(id: number, error: string, retryAt: number): void {
      failed.run(retryAt, error.slice(0, 500), id);
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
