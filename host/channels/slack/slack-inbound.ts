import { z } from 'zod';
import type { InboundMessage, MediaKind } from '../channel.ts';
import { SLACK_CHANNEL } from './slack-config.ts';

/** The bot as auth.test described it. */
export interface SlackIdentity {
  userId: string;
  botId?: string;
  team?: string;
}

const fileSchema = z.object({
  id: z.string(),
  name: z.string().optional(),
  mimetype: z.string().optional(),
  size: z.number().optional(),
  subtype: z.string().optional(),
  url_private_download: z.string().optional(),
});
export type SlackFile = z.infer<typeof fileSchema>;

/** A `message` event as Socket Mode delivers it; only the fields the adapter reads, the rest passes. */
export const slackMessageEventSchema = z.looseObject({
  type: z.literal('message'),
  channel: z.string(),
  channel_type: z.string().optional(),
  user: z.string().optional(),
  bot_id: z.string().optional(),
  subtype: z.string().optional(),
  text: z.string().optional(),
  ts: z.string(),
  thread_ts: z.string().optional(),
  files: z.array(fileSchema).optional(),
  user_profile: z
    .looseObject({ display_name: z.string().optional(), real_name: z.string().optional() })
    .optional(),
});
export type SlackMessageEvent = z.infer<typeof slackMessageEventSchema>;

export type SlackDecision =
  | { kind: 'ignore'; reason: string }
  | { kind: 'refuse'; userId: string; chatId: string }
  | { kind: 'ingest'; message: InboundMessage; file?: SlackFile };

/**
 * Subtypes that are a person's new message. Everything else (edits, deletions, joins, bots, shares of
 * other messages) is not a turn: an edit is not re-answered, and a shared message's words are not
 * its sharer's, so they never reach the host as if they were.
 */
const PERSON_SUBTYPES = new Set([undefined, 'file_share', 'thread_broadcast']);

/** Slack's `<@U123>` markup is a real mention; typed "@name" text stays plain text. */
const mentionOf = (userId: string) => `<@${userId}>`;

/** Slack escapes only these three in message text. */
const unescape = (text: string) => text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

/** What a file's declared MIME type makes of it; a claim the host checks against the bytes. */
export function mediaKindOf(file: SlackFile): MediaKind {
  const mime = file.mimetype ?? '';
  if (file.subtype === 'slack_audio') return 'voice';
  if (mime.startsWith('image/')) return 'photo';
  if (mime.startsWith('audio/')) return 'audio';
  if (mime.startsWith('video/')) return 'video';
  return 'document';
}

/**
 * Decides what a message event is, from platform facts only: `fromOwner` is the configured owner's member
 * id writing in a direct message with the bot; a mention is Slack's own `<@bot>` markup; a reply to the
 * bot is a thread under a message the host sent. Text never makes anyone the owner.
 */
export function decideInbound(
  e: SlackMessageEvent,
  bot: SlackIdentity,
  facts: {
    ownerId: string | undefined;
    triggerWord: string;
    isOwnMessage(chatId: string, ts: string): boolean;
  },
): SlackDecision {
  if (!PERSON_SUBTYPES.has(e.subtype)) return { kind: 'ignore', reason: `subtype ${e.subtype}` };
  if (e.bot_id !== undefined || !e.user) return { kind: 'ignore', reason: 'a bot wrote it' };
  if (e.user === bot.userId) return { kind: 'ignore', reason: 'our own message' };
  const direct = e.channel_type === 'im';
  const fromOwner = direct && facts.ownerId !== undefined && e.user === facts.ownerId;
  if (direct && !fromOwner) return { kind: 'refuse', userId: e.user, chatId: e.channel };
  const raw = e.text ?? '';
  const mentionsBot = raw.includes(mentionOf(bot.userId));
  const text = unescape(raw.split(mentionOf(bot.userId)).join(facts.triggerWord));
  const repliesToBot =
    e.thread_ts !== undefined && e.thread_ts !== e.ts && facts.isOwnMessage(e.channel, e.thread_ts);
  const file = e.files?.find((f) => f.url_private_download !== undefined);
  const name = e.user_profile?.display_name || e.user_profile?.real_name || e.user;
  const message: InboundMessage = {
    channel: SLACK_CHANNEL,
    chatId: e.channel,
    externalId: e.ts,
    senderId: e.user,
    senderName: name,
    text: text === '' && !file ? '[empty message]' : text,
    // Slack's ts is seconds since the epoch with a per-channel sequence after the dot.
    sentAt: new Date(Math.floor(Number(e.ts) * 1000)).toISOString(),
    mentionsBot,
    repliesToBot,
    fromOwner,
    senderIsOwner: facts.ownerId !== undefined && e.user === facts.ownerId,
    origin: { kind: 'own' },
  };
  return file ? { kind: 'ingest', message, file } : { kind: 'ingest', message };
}
