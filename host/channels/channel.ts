/** A message as a channel adapter hands it to the host, already normalized. */
export interface InboundMessage {
  channel: string;
  chatId: string;
  /** The platform's id of the message; with channel and chat it identifies the message (duplicates are dropped). */
  externalId: string;
  senderId: string;
  senderName: string;
  text: string;
  sentAt: string;
  /** Set by the adapter from platform metadata (an @-mention entity of the bot, a reply to one of its messages). */
  mentionsBot: boolean;
  repliesToBot: boolean;
}

export interface InboundResult {
  /** False when the chat is not a registered group or the message was a duplicate. */
  stored: boolean;
  duplicate: boolean;
  triggered: boolean;
  messageId?: number;
  groupId?: string;
  /** Set when the message was an owner command (approve, deny, pending): the key of the host's answer. */
  commandReplyKey?: string;
}

export type InboundSink = (m: InboundMessage) => InboundResult;

export interface Channel {
  readonly name: string;
  /** Longest text one platform message may carry; longer replies are split by the channel. */
  readonly textLimit: number;
  /** How the agent should format replies for this channel, as prose for its system prompt. */
  readonly formattingRules: string;
  connect(sink: InboundSink): Promise<void>;
  disconnect(): Promise<void>;
  ownsChat(chatId: string): boolean;
  /**
   * Delivers one reply. Resolves once the platform accepted it; rejects on failure so the outbox retries.
   * The key is stable across retries, so a channel that can deduplicate uses it.
   */
  send(chatId: string, text: string, opts: { idempotencyKey: string }): Promise<void>;
  setTyping(chatId: string, on: boolean): Promise<void>;
}
