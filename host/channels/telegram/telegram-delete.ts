import type { Api } from 'grammy';
import type { Logger } from '../../logging/logger.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { parseConversationId } from './telegram-inbound.ts';

/**
 * Deletes one of the bot's own messages (deleteMessage). A message already gone counts as deleted; one
 * Telegram keeps (a bot may delete its messages for 48 hours) is logged and answers `false`.
 */
export async function deleteOwnMessage(
  api: Pick<Api, 'deleteMessage'>,
  target: { chatId: string; platformId: string },
  logger: Logger,
): Promise<boolean> {
  const messageId = Number(target.platformId);
  let chatId: number;
  try {
    ({ chatId } = parseConversationId(target.chatId));
  } catch {
    return false;
  }
  if (!Number.isSafeInteger(messageId)) return false;
  try {
    await api.deleteMessage(chatId, messageId);
    return true;
  } catch (err) {
    if (/message to delete not found/i.test(errorMessage(err))) return true;
    logger.warn({ err: errorMessage(err), chatId: target.chatId }, 'could not delete the message');
    return false;
  }
}
