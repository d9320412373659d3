import fs from 'node:fs';
import { GrammyError, HttpError, InputFile, type Api } from 'grammy';
import type { InlineKeyboardMarkup } from 'grammy/types';
import type { OutboundAttachment, OutboundPiece, SendOutcome } from '../channel.ts';
import { isEntityParseError, toTelegramHtml } from './telegram-format.ts';
import { parseConversationId } from './telegram-inbound.ts';
import { errorMessage } from '../../errors/error-message.ts';

/** Telegram's limit on callback_data; a longer command keeps only its text form. */
const CALLBACK_DATA_MAX_BYTES = 64;

function keyboard(actions: OutboundPiece['actions']): InlineKeyboardMarkup | undefined {
  const buttons = (actions ?? [])
    .filter((a) => Buffer.byteLength(a.command) <= CALLBACK_DATA_MAX_BYTES)
    .map((a) => ({ text: a.label, callback_data: a.command }));
  return buttons.length > 0 ? { inline_keyboard: [buttons] } : undefined;
}

/** Maps a Bot API failure onto the host's send outcomes; never throws. */
export function outcomeOfError(err: unknown): SendOutcome {
  if (err instanceof GrammyError) {
    const reason = `${err.method}: ${err.error_code} ${err.description}`;
    const moved = err.parameters.migrate_to_chat_id;
    if (moved !== undefined) return { kind: 'moved', newChatId: String(moved), reason };
    if (err.error_code === 429) {
      const after = err.parameters.retry_after;
      return { kind: 'retry', reason, ...(after !== undefined ? { retryAfterMs: after * 1000 } : {}) };
    }
    // 403: blocked by the user, kicked from the group, or not a member any more.
    if (err.error_code === 403) return { kind: 'permanent', reason };
    // 400: chat not found, topic deleted or closed, no rights to write: the same request fails again.
    if (err.error_code === 400) return { kind: 'permanent', reason };
    // 401 (token revoked), 5xx, anything else: the channel's trouble, not this reply's.
    return { kind: 'retry', reason };
  }
  if (err instanceof HttpError) return { kind: 'retry', reason: `network: ${err.message}` };
  return { kind: 'retry', reason: errorMessage(err) };
}

/**
 * Sends one piece: HTML from the model's light Markdown, plain text if Telegram refuses the markup, in the
 * forum topic the conversation names. Returns the sent message id. Telegram picks message ids and the Bot
 * API takes no client id, so the piece's `sendKey` has nothing to name here: ids never repeat across
 * installs or restores, and a retry after an answer that was lost in transit can show the text twice.
 */
export async function sendPiece(api: Api, piece: OutboundPiece): Promise<SendOutcome> {
  let target;
  try {
    target = parseConversationId(piece.chatId);
  } catch (err) {
    return { kind: 'permanent', reason: errorMessage(err) };
  }
  const common = {
    ...(target.threadId !== undefined ? { message_thread_id: target.threadId } : {}),
    ...(keyboard(piece.actions) ? { reply_markup: keyboard(piece.actions) } : {}),
    link_preview_options: { is_disabled: true },
  };
  if (piece.attachment) {
    // The host's copy is gone (a restore without it): no retry can bring it back.
    if (!fs.existsSync(piece.attachment.path))
      return { kind: 'permanent', reason: `the file to send (${piece.attachment.fileName}) is gone` };
    try {
      return await sendFile(api, target.chatId, piece.attachment, {
        ...(target.threadId !== undefined ? { message_thread_id: target.threadId } : {}),
        ...(piece.text ? { caption: piece.text } : {}),
      });
    } catch (err) {
      return outcomeOfError(err);
    }
  }
  try {
    try {
      const sent = await api.sendMessage(target.chatId, toTelegramHtml(piece.text), {
        ...common,
        parse_mode: 'HTML',
      });
      return { kind: 'delivered', platformIds: [String(sent.message_id)] };
    } catch (err) {
      if (!(err instanceof GrammyError && err.error_code === 400 && isEntityParseError(err.description)))
        throw err;
      const sent = await api.sendMessage(target.chatId, piece.text, common);
      return { kind: 'delivered', platformIds: [String(sent.message_id)] };
    }
  } catch (err) {
    return outcomeOfError(err);
  }
}

/** A file as the Bot API shows it best: a photo, a voice note (Ogg/Opus), or else a document. */
async function sendFile(
  api: Api,
  chatId: number,
  file: OutboundAttachment,
  options: { message_thread_id?: number; caption?: string },
): Promise<SendOutcome> {
  const input = new InputFile(file.path, file.fileName);
  const sent =
    file.kind === 'photo'
      ? await api.sendPhoto(chatId, input, options)
      : file.kind === 'voice'
        ? await api.sendVoice(chatId, input, options)
        : await api.sendDocument(chatId, input, options);
  return { kind: 'delivered', platformIds: [String(sent.message_id)] };
}
