import type {
  ChannelHost,
  ChannelStatus,
  InboundMessage,
  InboundResult,
} from '../../host/channels/channel.ts';

/** A ChannelHost that keeps what a channel hands it, with the host's duplicate rule on (chat, id). */
export function createRecordingChannelHost() {
  const messages: InboundMessage[] = [];
  const statuses: ChannelStatus[] = [];
  const chats = new Map<string, string>();
  const sent = new Set<string>();
  const seen = new Set<string>();
  const moves: { from: string; to: string }[] = [];
  const host: ChannelHost = {
    ingest(m): InboundResult {
      const key = `${m.chatId}\u0000${m.externalId}`;
      if (seen.has(key)) return { stored: false, duplicate: true, triggered: false };
      seen.add(key);
      messages.push(m);
      return { stored: true, duplicate: false, triggered: false, messageId: messages.length };
    },
    // The message keeps its media descriptor: a test downloads through it as the host would.
    ingestMedia: async (m) => host.ingest(m),
    onStatus: (s) => statuses.push(s),
    onChatSeen: (c) => chats.set(c.chatId, c.title),
    isOwnMessage: (chatId, id) => sent.has(`${chatId}\u0000${id}`),
    onChatMoved: (from, to) => void moves.push({ from, to }),
  };
  return {
    host,
    messages,
    statuses,
    chats,
    moves,
    /** What the outbox does with a delivered send: remember its platform ids. */
    recordSent(chatId: string, ids: string[]) {
      for (const id of ids) sent.add(`${chatId}\u0000${id}`);
    },
    lastStatus: () => statuses.at(-1),
  };
}
