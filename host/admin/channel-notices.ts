import crypto from 'node:crypto';
import type { Channel, ChannelState, ChannelStatus } from '../channels/channel.ts';
import type { AdminChat } from './admin-chats.ts';

export interface ChannelNoticesDeps {
  /** The admin chats' notice (`createAdminChats(...).notify`). */
  notify(key: string, text: string, opts?: { except?: AdminChat }): void;
  /** False until every channel started and again once the host stops: a channel's own shutdown is no news. */
  running(): boolean;
}

/** What the owner hears about a channel's status: its warnings once, and losing it. */
export function createChannelNotices({ notify, running }: ChannelNoticesDeps) {
  return {
    statusChanged(
      ch: Pick<Channel, 'name' | 'adminChatId'>,
      before: ChannelState | undefined,
      status: ChannelStatus,
    ): void {
      // A channel that works but warns (Telegram's privacy mode hiding the trigger word) tells the
      // owner once: the outbox key is the warning itself, so a restart or a re-check repeats nothing.
      if (status.state === 'connected' && status.reason) {
        const digest = crypto.createHash('sha256').update(status.reason).digest('hex').slice(0, 16);
        notify(`channel-note:${ch.name}:${digest}`, `The ${ch.name} channel: ${status.reason}`);
      }
      // Losing a channel is news to the owner, told in the admin chats that still work.
      if (
        before !== status.state &&
        (status.state === 'logged-out' || status.state === 'stopped') &&
        running()
      ) {
        const adminChat = ch.adminChatId();
        notify(
          `channel-status:${ch.name}:${status.state}:${status.since}`,
          `The ${ch.name} channel is ${status.state}${status.reason ? `: ${status.reason}` : ''}.`,
          adminChat === undefined ? {} : { except: { channel: ch.name, chatId: adminChat } },
        );
      }
    },
  };
}
