import fs from 'node:fs';
import type { Logger } from '../logging/logger.ts';
import type { NewOutboxItem, OutboxItem, OutboxStore } from '../store/outbox-store.ts';
import type { Channel, SendOutcome } from './channel.ts';
import { chunkText } from './chunk-text.ts';
import { backoffMs } from '../time/backoff.ts';
import { systemClock, type Clock } from '../time/clock.ts';
import { errorMessage } from '../errors/error-message.ts';

export interface OutboxDispatcherDeps {
  outbox: OutboxStore;
  /** The configured channel of that name; undefined means there is none, so its pieces fail permanently. */
  channelFor(name: string): Channel | undefined;
  retryBaseMs: number;
  retryMaxMs: number;
  /** `[outbox] max_connection_drops`: sends of one piece that took the connection down before it is dead. */
  maxConnectionDrops?: number;
  onDelivered(item: OutboxItem): void;
  /**
   * A piece was dead-lettered: `permanent` (chat gone, bot removed, no such channel: tell the owner once per
   * chat) or `poison` (its sends kept taking the connection down: tell the owner once for this piece).
   */
  onDeadLetter(item: OutboxItem, reason: string, cause: DeadLetterCause): void;
  /**
   * The platform moved the chat: re-bind its group and pending pieces to `newChatId` (one transaction,
   * audited). Delivery of the piece continues at the new id.
   */
  onChatMoved(item: OutboxItem, newChatId: string, reason: string): void;
  logger: Logger;
  /** Retry times and the timer for the next one (default: the system clock; its timers never hold a stop). */
  clock?: Clock;
}

/** A platform that keeps answering "moved" would otherwise bounce a piece between ids forever. */
const MAX_MOVES_PER_SEND = 3;

export const DEFAULT_MAX_CONNECTION_DROPS = 3;

export type DeadLetterCause = 'permanent' | 'poison';

/**
 * Delivers stored replies: at least once, in order per chat, retried with backoff after a transient
 * failure or a restart, dead-lettered after a permanent one. Replies are split to the channel's text limit
 * when they are stored, one row per piece. Work starts on `enqueue`/`kick` and on a timer for the next
 * retry; nothing polls.
 */
export function createOutboxDispatcher({
  outbox,
  channelFor,
  retryBaseMs,
  retryMaxMs,
  maxConnectionDrops = DEFAULT_MAX_CONNECTION_DROPS,
  onDelivered,
  onDeadLetter,
  onChatMoved,
  logger,
  clock = systemClock,
}: OutboxDispatcherDeps) {
  let draining: Promise<void> | undefined;
  let again = false;
  let cancelTimer: (() => void) | undefined;
  let stopped = false;

  const backoff = (attempts: number) => backoffMs(attempts, { baseMs: retryBaseMs, maxMs: retryMaxMs });

  async function attempt(channel: Channel | undefined, item: OutboxItem): Promise<SendOutcome> {
    if (!channel) return { kind: 'permanent', reason: `there is no channel "${item.channel}" configured` };
    try {
      return await channel.send({
        chatId: item.chatId,
        text: item.text,
        idempotencyKey: item.idempotencyKey,
        sendKey: item.sendKey,
        ...(item.actions ? { actions: item.actions } : {}),
        ...(item.attachment ? { attachment: item.attachment } : {}),
      });
    } catch (err) {
      // Adapters map platform errors to outcomes; a throw is a bug there, and must not lose the reply.
      logger.error({ outboxId: item.id, channel: item.channel, err }, 'channel send threw; retrying');
      return { kind: 'retry', reason: `the ${item.channel} channel failed: ${errorMessage(err)}` };
    }
  }

  /** Delivers one piece; false when the chat's later pieces must not follow now (a retry, or a move). */
  async function deliver(original: OutboxItem): Promise<boolean> {
    let item = original;
    const channel = channelFor(item.channel);
    for (let moves = 0; ; moves += 1) {
      const outcome = await attempt(channel, item);
      if (outcome.kind === 'delivered') {
        outbox.markSent(item.id, {
          channel: item.channel,
          chatId: item.chatId,
          platformIds: outcome.platformIds,
        });
        onDelivered({ ...item, status: 'sent' });
        // The approved copy of a sent file has done its job (a dead-lettered one stays, for the owner).
        if (item.attachment)
          fs.promises.rm(item.attachment.path, { force: true }).catch((err: unknown) => {
            logger.warn({ outboxId: item.id, err: errorMessage(err) }, 'a sent file copy stayed');
          });
        // After a move the chat's other pieces were re-bound in the database: read them again from there.
        if (moves > 0) again = true;
        return moves === 0;
      }
      if (outcome.kind === 'moved' && moves < MAX_MOVES_PER_SEND) {
        logger.warn({ outboxId: item.id, from: item.chatId, to: outcome.newChatId }, 'chat moved');
        onChatMoved(item, outcome.newChatId, outcome.reason);
        item = { ...item, chatId: outcome.newChatId };
        continue;
      }
      if (outcome.kind === 'connection-lost') {
        const drops = item.connectionDrops + 1;
        if (drops < maxConnectionDrops) {
          const reason = `sending it took the ${item.channel} connection down (${drops} of ${maxConnectionDrops} before it is dead-lettered): ${outcome.reason}`;
          outbox.markConnectionDropped(item.id, reason, clock.now() + backoff(item.attempts));
          logger.warn(
            { outboxId: item.id, drops, reason: outcome.reason },
            'a send took the connection down',
          );
          return false;
        }
        // The same message keeps cutting the channel off for every chat: stop sending it.
        const reason = `sending it took the ${item.channel} connection down ${drops} times (last: ${outcome.reason})`;
        return deadLetter(item, reason, 'poison', moves);
      }
      if (outcome.kind === 'retry') {
        const retryAt = clock.now() + Math.max(backoff(item.attempts), outcome.retryAfterMs ?? 0);
        outbox.markFailed(item.id, outcome.reason, retryAt);
        logger.warn(
          { outboxId: item.id, attempts: item.attempts + 1, reason: outcome.reason },
          'delivery failed',
        );
        return false;
      }
      const reason = outcome.kind === 'moved' ? `the chat kept moving (${outcome.reason})` : outcome.reason;
      return deadLetter(item, reason, 'permanent', moves);
    }
  }

  /** Dead-letters a piece; the chat's later pieces still follow (true) unless the piece had moved chats. */
  function deadLetter(item: OutboxItem, reason: string, cause: DeadLetterCause, moves: number): boolean {
    outbox.markDead(item.id, reason, { connectionDropped: cause === 'poison' });
    logger.error(
      { outboxId: item.id, channel: item.channel, chatId: item.chatId, reason, cause },
      'reply dead-lettered',
    );
    onDeadLetter({ ...item, status: 'dead', lastError: reason }, reason, cause);
    if (moves > 0) again = true;
    return moves === 0;
  }

  async function deliverChat(items: OutboxItem[]): Promise<void> {
    for (const item of items) {
      // Later replies to the same chat wait, so a chat never sees them out of order.
      if (!(await deliver(item))) return;
    }
  }

  async function drain(): Promise<void> {
    do {
      again = false;
      const due = outbox.due(200);
      const byChat = new Map<string, OutboxItem[]>();
      for (const item of due) {
        const key = `${item.channel}\u0000${item.chatId}`;
        const list = byChat.get(key) ?? byChat.set(key, []).get(key);
        list?.push(item);
      }
      await Promise.all([...byChat.values()].map(deliverChat));
      if (due.length === 200) again = true;
    } while (again && !stopped);
  }

  function scheduleNext(): void {
    cancelTimer?.();
    cancelTimer = undefined;
    const at = outbox.nextDueAt();
    if (at === undefined || stopped) return;
    cancelTimer = clock.setTimer(kick, Math.max(0, at - clock.now()));
  }

  function kick(): void {
    if (stopped) return;
    if (draining) {
      again = true;
      return;
    }
    // Deferred: callers enqueue inside a transaction, and the row must be committed before it is read.
    draining = new Promise<void>((resolve) => setImmediate(resolve))
      .then(drain)
      .catch((err: unknown) => logger.error({ err }, 'outbox drain failed'))
      .finally(() => {
        draining = undefined;
        // Re-armed whatever happened in the drain: a failed drain must not leave replies without a timer.
        scheduleNext();
        if (again) kick();
      });
  }

  return {
    /**
     * Stores a reply synchronously, split into pieces within its channel's text limit (one row each, in
     * order, each with its own idempotency key), and schedules their delivery.
     */
    enqueue(item: NewOutboxItem): void {
      outbox.addAll(splitForChannel(item, channelFor(item.channel)?.textLimit));
      kick();
    },
    kick,
    async stop(): Promise<void> {
      stopped = true;
      cancelTimer?.();
      await draining;
    },
  };
}

/**
 * One row per piece. A reply that fits keeps its key; the pieces of a longer one are `<key>#<n>`, so a
 * replayed enqueue of the same reply (same key, same text, same limit) stores nothing twice.
 */
export function splitForChannel(item: NewOutboxItem, textLimit: number | undefined): NewOutboxItem[] {
  // A file is a piece of its own after the text, keyed `<key>#file`: a caption has a smaller limit of its
  // own on most platforms, and the text's pieces stay as they would be without it.
  if (item.attachment) {
    const { attachment, ...text } = item;
    return [
      ...splitForChannel(text, textLimit),
      { ...text, idempotencyKey: `${item.idempotencyKey}#file`, text: '', attachment },
    ];
  }
  if (textLimit === undefined || item.text.length <= textLimit) return [item];
  const pieces = chunkText(item.text, textLimit);
  // Buttons belong under the whole request: only the last piece carries them.
  return pieces.map((text, i) => {
    const { actions, ...rest } = item;
    return {
      ...rest,
      idempotencyKey: `${item.idempotencyKey}#${i + 1}`,
      text,
      ...(actions && i === pieces.length - 1 ? { actions } : {}),
    };
  });
}

export type OutboxDispatcher = ReturnType<typeof createOutboxDispatcher>;
