import type { Logger } from 'pino';
import type { NewOutboxItem, OutboxItem, OutboxStore } from '../store/outbox-store.ts';
import type { Channel } from './channel.ts';

export interface OutboxDispatcherDeps {
  outbox: OutboxStore;
  channelFor(name: string): Channel | undefined;
  retryBaseMs: number;
  retryMaxMs: number;
  onDelivered(item: OutboxItem): void;
  logger: Logger;
  now?: () => number;
}

/**
 * Delivers stored replies: at least once, in order per chat, retried with backoff after a channel error
 * or a restart. Work starts on `enqueue`/`kick` and on a timer for the next retry; nothing polls.
 */
export function createOutboxDispatcher({
  outbox,
  channelFor,
  retryBaseMs,
  retryMaxMs,
  onDelivered,
  logger,
  now = Date.now,
}: OutboxDispatcherDeps) {
  let draining: Promise<void> | undefined;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const backoff = (attempts: number) => Math.min(retryMaxMs, retryBaseMs * 2 ** Math.min(attempts, 20));

  async function deliverChat(items: OutboxItem[]): Promise<void> {
    for (const item of items) {
      const channel = channelFor(item.channel);
      try {
        if (!channel) throw new Error(`channel "${item.channel}" is not connected`);
        await channel.send(item.chatId, item.text, { idempotencyKey: item.idempotencyKey });
      } catch (err) {
        const retryAt = now() + backoff(item.attempts);
        outbox.markFailed(item.id, (err as Error).message, retryAt);
        logger.warn(
          { outboxId: item.id, attempts: item.attempts + 1, err: (err as Error).message },
          'delivery failed',
        );
        // Later replies to the same chat wait, so a chat never sees them out of order.
        return;
      }
      outbox.markSent(item.id);
      onDelivered({ ...item, status: 'sent' });
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
    if (timer) clearTimeout(timer);
    timer = undefined;
    const at = outbox.nextDueAt();
    if (at === undefined || stopped) return;
    timer = setTimeout(kick, Math.max(0, at - now()));
    timer.unref();
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
    /** Stores a reply synchronously and schedules its delivery. */
    enqueue(item: NewOutboxItem): void {
      outbox.add(item);
      kick();
    },
    kick,
    async stop(): Promise<void> {
      stopped = true;
      if (timer) clearTimeout(timer);
      await draining;
    },
  };
}

export type OutboxDispatcher = ReturnType<typeof createOutboxDispatcher>;
