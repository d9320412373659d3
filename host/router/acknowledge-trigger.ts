import type { Channel, InboundMessage } from '../channels/channel.ts';

/**
 * Acknowledges a message that triggered a run on its own channel (a reaction where the platform has them),
 * without waiting: it is a courtesy, and the run does not depend on it.
 */
export function acknowledgeTrigger(
  channel: Pick<Channel, 'acknowledge'> | undefined,
  m: InboundMessage,
): void {
  const { chatId, externalId, senderId, fromOwner } = m;
  void channel?.acknowledge?.({ chatId, externalId, senderId, fromOwner }).catch(() => undefined);
}
