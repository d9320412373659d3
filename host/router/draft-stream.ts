import type { Channel } from '../channels/channel.ts';
import type { Logger } from '../logging/logger.ts';
import type { Clock } from '../time/clock.ts';
import type { DraftGate } from '../security/policies/draft-gate.ts';
import { errorMessage } from '../errors/error-message.ts';

/** Telegram lets a bot edit about one message per second in a chat before it answers 429. */
export const DRAFT_EDIT_INTERVAL_MS = 1000;

/** How a streamed draft ended: the reply is this message now, or the caller delivers it as usual. */
export type DraftEnding =
  /** The draft message was edited to the approved text: the reply is delivered, do not send it again. */
  | { kind: 'edited'; platformId: string }
  /** No draft message is left (none was shown, or it was taken back): deliver the reply, if any, as usual. */
  | { kind: 'not-shown' };

export interface DraftStream {
  /** The reply as written so far (the whole text, not a delta). Never waits; at most one edit per interval. */
  update(text: string): void;
  /**
   * The run's reply was reviewed: `approved` with the text the outbound policy passed, or `refused`.
   * Waits for a draft edit under way, then edits the draft message to the approved text when it fits in
   * one message, and otherwise takes the draft message back (`unsend`). Later updates are ignored.
   */
  finish(review: { kind: 'approved'; text: string } | { kind: 'refused' }): Promise<DraftEnding>;
}

export interface DraftStreamDeps {
  channel: Pick<Channel, 'send' | 'editText' | 'unsend' | 'textLimit'>;
  chatId: string;
  /** Keys the first send of the draft (the outbox's idempotency and send keys are not used for drafts). */
  key: string;
  gate: DraftGate;
  clock: Clock;
  logger: Logger;
  intervalMs?: number;
}

/**
 * Streams one run's reply into one message of its chat: the first draft that passes the gate is sent,
 * later ones edit it, at most one platform call per interval (only the newest draft waiting is kept, so
 * a fast writer costs no more calls or scans than a slow one). Every draft passes the gate right before it
 * is shown; the first that does not stops the stream for good and takes the shown message back, so
 * nothing the outbound checks did not pass stays visible. The last edit is the approved text itself.
 */
export function createDraftStream(deps: DraftStreamDeps): DraftStream {
  const interval = deps.intervalMs ?? DRAFT_EDIT_INTERVAL_MS;
  const edits = deps.channel.editText;
  let platformId: string | undefined;
  let shownText: string | undefined;
  let waiting: string | undefined;
  let lastCallAt = -Infinity;
  let timer: (() => void) | undefined;
  let closed = false;
  /** Platform calls run one at a time, in order. */
  let chain: Promise<void> = Promise.resolve();

  const enqueue = (step: () => Promise<void>): Promise<void> => {
    chain = chain.then(step).catch((err: unknown) => {
      deps.logger.warn({ err: errorMessage(err), chatId: deps.chatId }, 'draft streaming failed');
      closed = true;
    });
    return chain;
  };

  const takeBack = async () => {
    if (platformId === undefined) return;
    const id = platformId;
    platformId = undefined;
    if (!(await deps.channel.unsend?.({ chatId: deps.chatId, platformId: id })))
      deps.logger.warn({ chatId: deps.chatId }, 'a draft could not be taken back');
  };

  const untilNextCall = () => Math.max(0, lastCallAt + interval - deps.clock.now());

  const show = async () => {
    const text = waiting;
    waiting = undefined;
    if (closed || text === undefined || text === shownText) return;
    if (text.length > deps.channel.textLimit || !(await deps.gate(text))) {
      // Fails closed: what the checks did not pass is never shown, and what was shown goes.
      closed = true;
      await takeBack();
      return;
    }
    if (closed) return;
    lastCallAt = deps.clock.now();
    if (platformId === undefined) {
      const sent = await deps.channel.send({
        chatId: deps.chatId,
        text,
        idempotencyKey: `draft:${deps.key}`,
        sendKey: `draft-${deps.key}`,
      });
      if (sent.kind !== 'delivered' || sent.platformIds.length !== 1) {
        closed = true;
        if (sent.kind === 'delivered') {
          for (const id of sent.platformIds) await deps.channel.unsend?.({ chatId: deps.chatId, platformId: id });
        }
        return;
      }
      platformId = sent.platformIds[0];
    } else if (!(await edits?.({ chatId: deps.chatId, platformId, text }))) {
      closed = true;
      await takeBack();
      return;
    }
    shownText = text;
  };

  const schedule = () => {
    if (timer || closed) return;
    timer = deps.clock.setTimer(() => {
      timer = undefined;
      void enqueue(show).then(() => {
        if (waiting !== undefined) schedule();
      });
    }, untilNextCall());
  };

  return {
    update(text) {
      if (closed || !edits) return;
      waiting = text;
      schedule();
    },

    async finish(review) {
      closed = true;
      waiting = undefined;
      timer?.();
      timer = undefined;
      await chain;
      if (platformId === undefined) return { kind: 'not-shown' };
      if (review.kind === 'approved' && review.text.length > 0 && review.text.length <= deps.channel.textLimit) {
        const id = platformId;
        const wait = untilNextCall();
        if (wait > 0) await new Promise<void>((resolve) => deps.clock.setTimer(resolve, wait));
        if (review.text === shownText || (await edits?.({ chatId: deps.chatId, platformId: id, text: review.text })))
          return { kind: 'edited', platformId: id };
      }
      await takeBack();
      return { kind: 'not-shown' };
    },
  };
}
