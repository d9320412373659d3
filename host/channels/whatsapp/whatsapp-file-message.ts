import fs from 'node:fs/promises';
import type { AnyMessageContent } from '@whiskeysockets/baileys';
import type { OutboundAttachment } from '../channel.ts';
import { markdownToWhatsApp } from './whatsapp-markdown.ts';

/**
 * The WhatsApp messages one outbound piece with a file becomes, as WhatsApp shows it best: a photo or a
 * document with the text as its caption; a voice note (push-to-talk) and then the text as a message of its
 * own, since a voice note carries no caption. The file is the host's own copy, read whole here (its size
 * was capped when the message was approved); Baileys encrypts and uploads it at each attempt.
 */
export async function fileMessages(file: OutboundAttachment, text: string): Promise<AnyMessageContent[]> {
  const bytes = await fs.readFile(file.path);
  const caption = text.trim() ? markdownToWhatsApp(text) : undefined;
  switch (file.kind) {
    case 'photo':
      return [{ image: bytes, mimetype: file.mime, ...(caption ? { caption } : {}) }];
    case 'voice':
      return [
        { audio: bytes, ptt: true, mimetype: file.mime },
        ...(caption ? [{ text: caption, linkPreview: null }] : []),
      ];
    case 'document':
      return [
        { document: bytes, mimetype: file.mime, fileName: file.fileName, ...(caption ? { caption } : {}) },
      ];
  }
}
