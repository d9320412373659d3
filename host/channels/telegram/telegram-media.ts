import type { Api } from 'grammy';
import type { Message } from 'grammy/types';
import { MediaTooLargeError, type InboundMedia, type MediaKind } from '../channel.ts';
import { readWithin } from '../media-download.ts';

/** A file a Telegram message carries, as the Bot API declares it (claims, checked by the host). */
export interface TelegramMediaSpec {
  kind: MediaKind;
  fileId: string;
  fileName?: string;
  declaredMime?: string;
  declaredBytes?: number;
  durationSec?: number;
}

const opt = <K extends string, V>(key: K, value: V | undefined) =>
  (value === undefined ? {} : { [key]: value }) as Partial<Record<K, V>>;

/** The file of a message, if it carries one the host takes in (a sticker stays a text placeholder). */
export function mediaOf(m: Message): TelegramMediaSpec | undefined {
  if (m.voice)
    return {
      kind: 'voice',
      fileId: m.voice.file_id,
      ...opt('declaredMime', m.voice.mime_type),
      ...opt('declaredBytes', m.voice.file_size),
      durationSec: m.voice.duration,
    };
  if (m.audio)
    return {
      kind: 'audio',
      fileId: m.audio.file_id,
      ...opt('fileName', m.audio.file_name),
      ...opt('declaredMime', m.audio.mime_type),
      ...opt('declaredBytes', m.audio.file_size),
      durationSec: m.audio.duration,
    };
  if (m.photo && m.photo.length > 0) {
    // Telegram sends each photo in several sizes; the largest is the one a person sent.
    const largest = m.photo.reduce((a, b) => (b.width * b.height > a.width * a.height ? b : a));
    return { kind: 'photo', fileId: largest.file_id, ...opt('declaredBytes', largest.file_size) };
  }
  if (m.document)
    return {
      kind: 'document',
      fileId: m.document.file_id,
      ...opt('fileName', m.document.file_name),
      ...opt('declaredMime', m.document.mime_type),
      ...opt('declaredBytes', m.document.file_size),
    };
  if (m.video_note)
    return {
      kind: 'video_note',
      fileId: m.video_note.file_id,
      ...opt('declaredBytes', m.video_note.file_size),
      durationSec: m.video_note.duration,
    };
  if (m.animation) return { kind: 'animation', fileId: m.animation.file_id };
  if (m.video)
    return {
      kind: 'video',
      fileId: m.video.file_id,
      ...opt('declaredBytes', m.video.file_size),
      durationSec: m.video.duration,
    };
  return undefined;
}

/**
 * The download of one file: getFile for its path, then the Bot API's file route, read within the host's
 * cap (a getFile size or Content-Length over it is refused before reading; a body that runs past it is cut).
 */
export function telegramMedia(
  spec: TelegramMediaSpec,
  api: Pick<Api, 'getFile'>,
  fileUrl: (filePath: string) => string,
): InboundMedia {
  const { fileId, ...declared } = spec;
  return {
    ...declared,
    async download(maxBytes, signal) {
      // grammY types its signal with the abort-controller shim; Node's own AbortSignal is what it uses.
      const file = await api.getFile(fileId, signal as unknown as Parameters<Api['getFile']>[1]);
      if (file.file_size !== undefined && file.file_size > maxBytes) throw new MediaTooLargeError(maxBytes);
      if (!file.file_path) throw new Error('Telegram gave no file path (the file may be over 20 MB)');
      const res = await fetch(fileUrl(file.file_path), { signal });
      if (!res.ok || !res.body) throw new Error(`Telegram answered HTTP ${res.status} for the file`);
      const length = res.headers.get('content-length');
      return readWithin(res.body, maxBytes, length === null ? file.file_size : Number(length));
    },
  };
}
