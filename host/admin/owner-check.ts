import type { InboundMessage } from '../channels/channel.ts';

/**
 * Whether a message is the owner's, for every channel alike: the adapter attests `fromOwner` from platform
 * facts only (the console: always, since only the owner can open its socket; WhatsApp: the linked account
 * in its own self-chat; Telegram: the configured owner in the bot's private chat). Nothing in the text,
 * sender name or sender id can make a message the owner's. Fails closed: anything but `true` is not.
 */
export function isOwnerMessage(m: Pick<InboundMessage, 'fromOwner'>): boolean {
  return m.fromOwner === true;
}
