import type { Channel } from '../channels/channel.ts';
import type { Clock } from '../time/clock.ts';
import { repeatEvery } from '../time/clock-timers.ts';

export interface TypingIndicatorDeps {
  groups: { get(groupId: string): { channel: string; chatId: string } | undefined };
  /** Whether the group has a run active or waiting (the queue's view). */
  isBusy(groupId: string): boolean;
  channelFor(name: string): Pick<Channel, 'setTyping' | 'typingRenewMs'> | undefined;
  /** The host's clock: the renewals run on it. */
  clock: Pick<Clock, 'setTimer'>;
}

/** Where typing is shown for a busy group, and how to stop renewing it. */
interface Shown {
  channel: string;
  chatId: string;
  stopRenewing(): void;
}

/**
 * A typing indicator for the whole of a group's run (best effort): on when a message triggers it, renewed
 * at the channel's `typingRenewMs` (the platform lets it lapse after a few seconds) through tool calls and
 * waits for the owner, off once the queue says the group is idle. `sync` reads the queue on the next turn
 * of the event loop, after the queue settled the change that prompted it, and tells the channel only when
 * the state flips. After `stop` nothing is renewed, and a sync already scheduled does nothing: the store
 * it reads may be closed by then.
 */
export function createTypingIndicator({ groups, isBusy, channelFor, clock }: TypingIndicatorDeps) {
  const shown = new Map<string, Shown>();
  let stopped = false;
  const tell = (channel: string, chatId: string, on: boolean) =>
    void channelFor(channel)
      ?.setTyping(chatId, on)
      .catch(() => undefined);

  function start(groupId: string, g: { channel: string; chatId: string }): void {
    tell(g.channel, g.chatId, true);
    const renewMs = channelFor(g.channel)?.typingRenewMs;
    const stopRenewing =
      renewMs === undefined
        ? () => undefined
        : repeatEvery(clock, () => tell(g.channel, g.chatId, true), renewMs);
    shown.set(groupId, { channel: g.channel, chatId: g.chatId, stopRenewing });
  }

  function end(groupId: string): void {
    const s = shown.get(groupId);
    if (!s) return;
    shown.delete(groupId);
    s.stopRenewing();
    tell(s.channel, s.chatId, false);
  }

  return {
    sync(groupId: string): void {
      setImmediate(() => {
        if (stopped) return;
        const g = groups.get(groupId);
        const busy = !!g && isBusy(groupId);
        if (busy === shown.has(groupId)) return;
        if (busy && g) start(groupId, g);
        else end(groupId);
      });
    },
    stop(): void {
      stopped = true;
      for (const s of shown.values()) s.stopRenewing();
      shown.clear();
    },
  };
}
