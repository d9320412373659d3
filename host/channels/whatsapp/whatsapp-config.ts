import { z } from 'zod';
import { ackReaction } from '../telegram/telegram-config.ts';

/** WhatsApp Web's own socket; `websocket_url` changes it only for test servers. */
export const WHATSAPP_WEBSOCKET_URL = 'wss://web.whatsapp.com/ws/chat';

/** `[channels.whatsapp]`: an absent section means the channel is not configured. */
export const whatsappConfigSchema = z
  .object({
    enabled: z.boolean().default(true),
    websocket_url: z
      .string()
      .refine((u) => /^wss?:\/\/[^\s]+$/.test(u), { message: 'must be a ws:// or wss:// URL' })
      .default(WHATSAPP_WEBSOCKET_URL),
    /**
     * Longest piece of a reply sent as one WhatsApp message. WhatsApp itself takes ~65,000 characters,
     * but a reply cut at paragraphs into phone-screen pieces is what people can read.
     */
    chunk_size: z.number().int().min(200).max(60_000).default(4_000),
    /** The reaction put on a message that triggers a run, so people see at once it was heard; `false`: none. */
    ack_reaction: ackReaction,
  })
  .strict();

export type WhatsAppConfig = z.infer<typeof whatsappConfigSchema>;
