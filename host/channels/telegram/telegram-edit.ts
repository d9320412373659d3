import { GrammyError, type Api } from 'grammy';
import type { Logger } from '../../logging/logger.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { isEntityParseError, toTelegramHtml } from './telegram-format.ts';
import { ownMessageIds } from './telegram-delete.ts';

/**
 * Replaces the text of one of the bot's own messages (editMessageText), rendered as `sendPiece` renders a
 * reply so the last edit reads exactly as a sent reply would. Telegram answers "message is not modified"
 * for an edit to the same text: the message shows it, so that is a success.
 */
export async function editOwnMessage(
  api: Pick<Api, 'editMessageText'>,
  target: { chatId: string; platformId: string; text: string },
  logger: Logger,
): Promise<boolean> {
  const ids = ownMessageIds(target);
  if (!ids) return false;
  const { chatId, messageId } = ids;
  const options = { link_preview_options: { is_disabled: true } };
  try {
    try {
      await api.editMessageText(chatId, messageId, toTelegramHtml(target.text), {
        ...options,
        parse_mode: 'HTML',
      });
    } catch (err) {
      if (!(err instanceof GrammyError && err.error_code === 400 && isEntityParseError(err.description)))
        throw err;
      await api.editMessageText(chatId, messageId, target.text, options);
    }
    return true;
  } catch (err) {
    if (/message is not modified/i.test(errorMessage(err))) return true;
    logger.warn({ err: errorMessage(err), chatId: target.chatId }, 'could not edit the message');
    return false;
  }
}
