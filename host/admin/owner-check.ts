import type { InboundMessage } from '../channels/channel.ts';

/**
 * Whether a message is the owner's, for every channel alike: the adapter attests `fromOwner` from platform
 * facts only (the console: always, since only the owner can open its socket; WhatsApp: the linked account
 * in its own self-chat; Telegram: the configured owner in the bot's private chat). Nothing in the text,
 * sender name or sender id can make a message the owner's. Fails closed: anything but `true` is not.
 * Only the owner's own words count: a message they forwarded (even one they wrote earlier) is a copy of
 * someone's words, never their command or approval.
 */
export function isOwnerMessage(m: Pick<InboundMessage, 'fromOwner' | 'origin'>): boolean {
  return m.fromOwner === true && m.origin.kind === 'own';
}
