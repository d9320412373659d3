import type { Api } from 'grammy';
import type { ReactionTypeEmoji } from 'grammy/types';
import type { AcknowledgeTarget } from '../channel.ts';
import type { Logger } from '../../logging/logger.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { parseConversationId } from './telegram-inbound.ts';

/**
 * Puts `emoji` on the message that triggered a run (setMessageReaction), or nothing when the config turned
 * acknowledgements off. Best effort: a chat where reactions are disabled, or an emoji Telegram does not
 * offer, is logged and the run goes on.
 */
export async function reactTo(
  api: Pick<Api, 'setMessageReaction'>,
  emoji: string | false,
  target: AcknowledgeTarget,
  logger: Logger,
): Promise<void> {
  if (emoji === false) return;
  const messageId = Number(target.externalId);
  if (!Number.isSafeInteger(messageId)) return;
  let chatId: number;
  try {
    ({ chatId } = parseConversationId(target.chatId));
  } catch {
    return;
  }
  const reaction = [{ type: 'emoji', emoji } as ReactionTypeEmoji];
  await api
    .setMessageReaction(chatId, messageId, reaction)
    .catch((err: unknown) =>
      logger.warn({ err: errorMessage(err), chatId: target.chatId }, 'could not acknowledge the message'),
    );
}
