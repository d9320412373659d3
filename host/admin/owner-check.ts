import type { InboundMessage } from '../channels/channel.ts';
import { LOCAL_CHANNEL } from '../channels/local/local-channel.ts';

/**
 * The local console's sender is always `owner`: only the owner can open the host's socket (0600 in a 0700
 * folder), and the console sets the sender id itself; no client input reaches it.
 */
export function isLocalOwnerMessage(m: InboundMessage): boolean {
  return m.channel === LOCAL_CHANNEL && m.senderId === 'owner';
}
