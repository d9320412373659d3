import fs from 'node:fs';
import { ErrorCode, type WebClient } from '@slack/web-api';
import type { OutboundPiece, SendOutcome } from '../channel.ts';
import { errorMessage } from '../../errors/error-message.ts';

/** Platform errors a retry can cure; every other `ok: false` answer fails the same way again. */
const TRANSIENT = new Set([
  'ratelimited',
  'internal_error',
  'fatal_error',
  'service_unavailable',
  'request_timeout',
]);

/** Maps a Web API failure onto the host's send outcomes; never throws. */
export function outcomeOfError(err: unknown): SendOutcome {
  const e = err as { code?: string; data?: { error?: string }; retryAfter?: number; statusCode?: number };
  switch (e.code) {
    case ErrorCode.RateLimitedError:
      return {
        kind: 'retry',
        reason: 'ratelimited',
        ...(e.retryAfter ? { retryAfterMs: e.retryAfter * 1000 } : {}),
      };
    case ErrorCode.PlatformError: {
      const code = e.data?.error ?? 'unknown_error';
      // channel_not_found, not_in_channel, is_archived, invalid_auth…: the same request fails again.
      return TRANSIENT.has(code) ? { kind: 'retry', reason: code } : { kind: 'permanent', reason: code };
    }
    case ErrorCode.HTTPError:
      return { kind: 'retry', reason: `HTTP ${e.statusCode ?? '?'}` };
    default:
      return { kind: 'retry', reason: errorMessage(err) };
  }
}

/**
 * Sends one piece: a text message (chat.postMessage, whose `ts` is the message's id), or a file with the
 * text as its comment (files.uploadV2: getUploadURLExternal, the upload, completeUploadExternal). Slack
 * takes no client id, so a retry after an answer lost in transit can show the text twice. Buttons are not
 * sent: the piece's text already carries the typed command (approve <id>), which works everywhere.
 */
export async function sendPiece(web: WebClient, piece: OutboundPiece): Promise<SendOutcome> {
  try {
    if (piece.attachment) {
      const a = piece.attachment;
      // The host's copy is gone (a restore without it): no retry can bring it back.
      if (!fs.existsSync(a.path))
        return { kind: 'permanent', reason: `the attachment ${a.fileName} is gone` };
      const res = (await web.filesUploadV2({
        channel_id: piece.chatId,
        file: fs.readFileSync(a.path),
        filename: a.fileName,
        ...(piece.text ? { initial_comment: piece.text } : {}),
      })) as { files?: { files?: { id?: string }[] }[] };
      const ids = (res.files ?? []).flatMap((f) => f.files ?? []).map((f) => `file:${f.id ?? ''}`);
      return { kind: 'delivered', platformIds: ids };
    }
    const res = await web.chat.postMessage({ channel: piece.chatId, text: piece.text, unfurl_links: false });
    if (!res.ts) return { kind: 'retry', reason: 'chat.postMessage answered without a ts' };
    return { kind: 'delivered', platformIds: [res.ts] };
  } catch (err) {
    return outcomeOfError(err);
  }
}
