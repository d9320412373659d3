/**
 * Renders chat messages for the model as data, not instructions: one JSON object per message (so no
 * text can close its own string), inside a fence whose closing tag carries a random nonce the senders
 * cannot know in advance.
 */
import type { ChatMessage } from '../protocol.ts';
import { zonedTime } from './zoned-time.ts';

export interface RenderChatOptions {
  assistantName: string;
  timezone: string;
  /** Random per rendering; see createNonce in the run controller. */
  nonce: string;
  /** The admin chat's messages come from the owner; every other chat's from untrusted people. */
  trusted: boolean;
}

export function renderChatMessages(messages: readonly ChatMessage[], options: RenderChatOptions): string {
  const source = options.trusted ? 'admin chat (the owner)' : 'untrusted chat participants';
  const lines = messages.map((m) => {
    const time = zonedTime(new Date(m.timestamp), options.timezone);
    return JSON.stringify({
      id: m.id,
      time: `${time.local} ${time.offset}`,
      from: m.fromAssistant ? `${options.assistantName} (you)` : m.senderName || m.sender,
      senderId: m.sender,
      text: m.text,
    });
  });
  return [
    `<chat_messages source="${source}" nonce="${options.nonce}">`,
    ...lines,
    `</chat_messages nonce="${options.nonce}">`,
  ].join('\n');
}
