import { GrammyError, type Api } from 'grammy';
import type { Logger } from '../../logging/logger.ts';
import { errorMessage } from '../../errors/error-message.ts';

/** Messages whose buttons were taken off, remembered so a second request for one sends nothing. */
const REMEMBERED = 1_000;

/**
 * Takes the inline keyboard off a message the bot sent, once per message: the owner's press (the handler)
 * and the host's retraction when the request is settled both ask, whichever comes first does it.
 */
export function createButtonRetraction({
  api,
  logger,
}: {
  api: Pick<Api, 'editMessageReplyMarkup'>;
  logger: Logger;
}) {
  const done = new Set<string>();
  return async function retract(chatId: number, messageId: number): Promise<boolean> {
    const key = `${chatId}:${messageId}`;
    if (done.has(key)) return true;
    // Marked before the call, so a second ask while the first is on its way sends nothing either.
    done.add(key);
    const oldest = done.values().next();
    if (done.size > REMEMBERED && !oldest.done) done.delete(oldest.value);
    try {
      // No reply_markup: the message keeps its text and loses its keyboard.
      await api.editMessageReplyMarkup(chatId, messageId);
      return true;
    } catch (err) {
      // Someone (another client of the bot) got there first: the buttons are gone either way.
      if (err instanceof GrammyError && /message is not modified/i.test(err.description)) return true;
      done.delete(key);
      logger.warn({ err: errorMessage(err), chatId, messageId }, 'could not take the buttons off a message');
      return false;
    }
  };
}
