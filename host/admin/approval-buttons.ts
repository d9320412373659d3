import type { Logger } from '../logging/logger.ts';
import type { Channel } from '../channels/channel.ts';
import type { OutboxItem, OutboxStore } from '../store/outbox-store.ts';
import { systemClock, type Clock } from '../time/clock.ts';
import { approvalNoticeKey } from './approval-message.ts';

/** Settled requests remembered, so a later change of one (its execution) asks the channels nothing. */
const REMEMBERED = 1_000;

/** The approval id an approval request's outbox key names (`approval:<id>`, `#<n>` and `@<chat>` after it). */
const NOTICE_KEY = /^approval:([a-z0-9]+)(?:$|[#@])/;

export interface ApprovalButtonsDeps {
  outbox: Pick<OutboxStore, 'deliveredWithActions' | 'platformIds'>;
  /** The started channel of that name, if any (a channel not started yet has nothing to take back). */
  channelFor(name: string): Channel | undefined;
  /** Whether the request still waits for the owner (its buttons still apply). */
  isOpen(approvalId: string): boolean;
  /** Bounds the wait at a stop (default: the system clock). */
  clock?: Pick<Clock, 'setTimer'>;
  logger: Logger;
}

/**
 * Takes an approval request's buttons off every admin chat it was delivered to once the request is settled,
 * whoever settled it (a typed `approve <id>` in any admin chat, the CLI, an expiry): a button left on a
 * decided request invites a press that can only answer "already decided". Channels that show buttons say
 * so by their `retractActions` capability; the others have nothing to take back. Best effort: a platform
 * that refuses leaves a dead button, whose press still only gets the host's "already decided" answer.
 */
export function createApprovalButtons({
  outbox,
  channelFor,
  isOpen,
  clock = systemClock,
  logger,
}: ApprovalButtonsDeps) {
  const inFlight = new Set<Promise<unknown>>();
  // Requests whose buttons were already taken back (an execution after the approval changes nothing more).
  const retracted = new Set<string>();
  const takeOff = (approvalId: string, piece: { channel: string; chatId: string; platformId: string }) => {
    const channel = channelFor(piece.channel);
    if (!channel?.retractActions) return;
    const done: Promise<unknown> = channel
      .retractActions({ chatId: piece.chatId, platformId: piece.platformId })
      .catch((err: unknown) =>
        logger.warn({ err, approvalId, channel: piece.channel }, 'could not take the buttons off'),
      )
      .finally(() => inFlight.delete(done));
    inFlight.add(done);
  };
  return {
    /**
     * The approval service's change event (asked, decided, expired, executed): once the request is no
     * longer open, its buttons come off wherever they were delivered, once per request.
     */
    onChange(approvalId: string): void {
      if (isOpen(approvalId) || retracted.has(approvalId)) return;
      retracted.add(approvalId);
      const oldest = retracted.values().next();
      if (retracted.size > REMEMBERED && !oldest.done) retracted.delete(oldest.value);
      for (const piece of outbox.deliveredWithActions(approvalNoticeKey(approvalId)))
        takeOff(approvalId, piece);
    },
    /**
     * A piece was delivered: if it is a request that was settled while the piece waited in the outbox (its
     * channel was down, or the owner answered from the console first), its buttons come off at once.
     */
    onDelivered(item: OutboxItem): void {
      const id = item.actions ? NOTICE_KEY.exec(item.idempotencyKey)?.[1] : undefined;
      if (id === undefined || isOpen(id)) return;
      const platformId = outbox.platformIds(item.id).at(-1);
      if (platformId === undefined) return;
      takeOff(id, { channel: item.channel, chatId: item.chatId, platformId });
    },
    /**
     * Waits for the retractions under way, at most `boundMs` (a stopping host lets them finish before its
     * channels stop, but a platform that does not answer must not hold the stop).
     */
    async settled(boundMs = 3_000): Promise<void> {
      if (inFlight.size === 0) return;
      let cancel: (() => void) | undefined;
      await Promise.race([
        Promise.all([...inFlight]),
        new Promise<void>((resolve) => {
          cancel = clock.setTimer(resolve, boundMs);
        }),
      ]);
      cancel?.();
    },
  };
}
