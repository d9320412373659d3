import type { Channel } from '../channels/channel.ts';

export interface TypingIndicatorDeps {
  groups: { get(groupId: string): { channel: string; chatId: string } | undefined };
  /** Whether the group has a run active or waiting (the queue's view). */
  isBusy(groupId: string): boolean;
  channelFor(name: string): Pick<Channel, 'setTyping'> | undefined;
}

/**
 * A typing indicator while a group's run is active (best effort): on when a message triggers it, off once
 * the queue says the group is idle. `sync` reads the queue on the next turn of the event loop, after the
 * queue settled the change that prompted it, and tells the channel only when the state flips. After
 * `stop` a sync already scheduled does nothing: the store it reads may be closed by then.
 */
export function createTypingIndicator({ groups, isBusy, channelFor }: TypingIndicatorDeps) {
  const typing = new Set<string>();
  let stopped = false;
  return {
    sync(groupId: string): void {
      setImmediate(() => {
        if (stopped) return;
        const g = groups.get(groupId);
        const busy = !!g && isBusy(groupId);
        if (!g || busy === typing.has(groupId)) return;
        if (busy) typing.add(groupId);
        else typing.delete(groupId);
        void channelFor(g.channel)
          ?.setTyping(g.chatId, busy)
          .catch(() => undefined);
      });
    },
    stop(): void {
      stopped = true;
    },
  };
}
