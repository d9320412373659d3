import type { InboundMessage } from '../../host/channels/channel.ts';

/** The owner's own message in the console's admin chat, as the adapter hands it over; `over` changes any field. */
export function ownerMessage(text: string, over: Partial<InboundMessage> = {}): InboundMessage {
  return {
    channel: 'local',
    chatId: 'main',
    externalId: `m-${Math.random()}`,
    senderId: 'owner',
    senderName: 'me',
    text,
    sentAt: new Date().toISOString(),
    mentionsBot: false,
    repliesToBot: false,
    fromOwner: true,
    origin: { kind: 'own' },
    ...over,
  };
}
