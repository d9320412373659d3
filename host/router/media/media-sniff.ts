import { fileTypeFromBuffer } from 'file-type';
import type { MediaKind } from '../../channels/channel.ts';

/** What the bytes are, as far as the host cares: how it may be used, and the extension it is stored under. */
export type MediaCategory = 'audio' | 'image' | 'pdf' | 'text';

export type SniffResult =
  { ok: true; category: MediaCategory; mime: string; ext: string } | { ok: false; reason: string };

/** Images a vision model takes; anything else that claims to be a photo is refused. */
const IMAGE_EXTS = new Set(['jpg', 'png', 'webp', 'gif']);
/** Voice and audio the transcription routes take. */
const AUDIO_EXTS = new Set(['opus', 'ogg', 'oga', 'mp3', 'm4a', 'wav', 'flac', 'webm', 'mp4']);
/** Document names whose content is plain text: no magic number, so they are checked as UTF-8 text. */
const TEXT_EXTS = new Set(['txt', 'md', 'csv', 'tsv', 'json', 'log', 'xml', 'yaml', 'yml', 'html', 'htm']);
/** Names that mean the same type. */
const SAME_TYPE: Record<string, string> = { jpeg: 'jpg', oga: 'ogg', opus: 'ogg', markdown: 'md' };

const norm = (ext: string) => SAME_TYPE[ext] ?? ext;

/** The extension a file name claims, lower case, or undefined. */
export function claimedExtension(fileName: string | undefined): string | undefined {
  const m = /\.([A-Za-z0-9]{1,10})$/.exec(fileName ?? '');
  return m?.[1]?.toLowerCase();
}

/** UTF-8 without NUL bytes or other control characters than whitespace: what a text document must be. */
export function isPlainText(bytes: Uint8Array): boolean {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return false;
  }
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is being looked for
  return !/[\u0000-\u0008\u000e-\u001f\u007f]/.test(text);
}

/**
 * Decides from the bytes (file-type's magic numbers; plain text when no magic number and the bytes are
 * UTF-8 text) whether a file is what the message says it is, and what it may be used as. The platform's
 * MIME type and the sender's file name are claims: a file whose name says one type while its bytes are
 * another is refused, so nothing downstream (a PDF reader, a vision model) is handed what it did not expect.
 */
export async function sniffMedia(
  kind: MediaKind,
  bytes: Uint8Array,
  fileName: string | undefined,
): Promise<SniffResult> {
  const found = await fileTypeFromBuffer(bytes);
  const claimed = claimedExtension(fileName);
  if (claimed && found && norm(claimed) !== norm(found.ext))
    return { ok: false, reason: `its name says .${claimed} but its content is ${found.mime}` };
  const category: MediaCategory | undefined = !found
    ? isPlainText(bytes)
      ? 'text'
      : undefined
    : found.ext === 'pdf'
      ? 'pdf'
      : IMAGE_EXTS.has(found.ext)
        ? 'image'
        : AUDIO_EXTS.has(found.ext) || found.mime.startsWith('audio/')
          ? 'audio'
          : undefined;
  if (!category)
    return { ok: false, reason: `its content (${found?.mime ?? 'unknown binary'}) is not supported` };
  const wanted: Record<MediaKind, MediaCategory[]> = {
    voice: ['audio'],
    audio: ['audio'],
    photo: ['image'],
    document: ['pdf', 'text', 'image', 'audio'],
    video: [],
    video_note: [],
    sticker: [],
    animation: [],
  };
  if (!wanted[kind].includes(category))
    return { ok: false, reason: `it was sent as ${kind} but its content is ${found?.mime ?? 'text'}` };
  if (category === 'text') {
    // Text has no magic number: only a name that says text makes it a text document.
    if (claimed && !TEXT_EXTS.has(norm(claimed)))
      return { ok: false, reason: `its name says .${claimed} but its content is plain text` };
    return { ok: true, category, mime: 'text/plain', ext: claimed ? norm(claimed) : 'txt' };
  }
  return {
    ok: true,
    category,
    mime: found?.mime ?? 'application/octet-stream',
    ext: norm(found?.ext ?? 'bin'),
  };
}
