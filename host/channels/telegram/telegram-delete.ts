import type { Api } from 'grammy';
import type { Logger } from '../../logging/logger.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { parseConversationId } from './telegram-inbound.ts';

/**
 * Deletes one of the bot's own messages (deleteMessage). A message already gone counts as deleted; one
 * Telegram keeps (a bot may delete its messages for 48 hours) is logged and answers `false`.
 */
/** The chat and message ids of one of the bot's own messages, or undefined when they are not Telegram's. */
export function ownMessageIds(target: {
  chatId: string;
  platformId: string;
}): { chatId: number; messageId: number } | undefined {
  const messageId = Number(target.platformId);
  if (!Number.isSafeInteger(messageId)) return undefined;
  try {
    return { chatId: parseConversationId(target.chatId).chatId, messageId };
  } catch {
    return undefined;
  }
}

export async function deleteOwnMessage(
  api: Pick<Api, 'deleteMessage'>,
  target: { chatId: string; platformId: string },
  logger: Logger,
): Promise<boolean> {
  const ids = ownMessageIds(target);
  if (!ids) return false;
  try {
    await api.deleteMessage(ids.chatId, ids.messageId);
    return true;
  } catch (err) {
    if (/message to delete not found/i.test(errorMessage(err))) return true;
    logger.warn({ err: errorMessage(err), chatId: target.chatId }, 'could not delete the message');
    return false;
  }
}
