import { WebClient } from '@slack/web-api';
import type { Logger } from '../../logging/logger.ts';
import type { Clock } from '../../time/clock.ts';
import type { Channel, ChannelHost, OutboundPiece, SendOutcome } from '../channel.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { SLACK_CHANNEL, type SlackConfig } from './slack-config.ts';
import { createSlackConnection } from './slack-connection.ts';
import { createSlackHandlers, type SlackEnvelope } from './slack-handlers.ts';
import type { SlackIdentity } from './slack-inbound.ts';
import { sendPiece } from './slack-send.ts';

/** Slack cuts messages at 40,000 characters but advises 4,000 for readability; pieces stay within that. */
export const SLACK_TEXT_LIMIT = 4000;

export interface SlackChannelDeps {
  config: SlackConfig;
  botToken: string;
  appToken: string;
  /** Why the tokens cannot work (slack-config.ts tokenProblem); the channel reports it as needs-login. */
  tokenProblem: string | undefined;
  /** `@<assistant name>`: what a `<@bot>` mention reads as in the stored text. */
  triggerWord: string;
  logger: Logger;
  clock?: Clock;
  retryBaseMs?: number;
}

const platformError = (err: unknown) => (err as { data?: { error?: string } }).data?.error;

/**
 * The Slack adapter on the official SDK: Socket Mode receives events over a WebSocket the bot opens (no
 * public URL), the Web API sends. It translates and nothing else. The parts: the message handlers
 * (slack-handlers.ts), the connection and its status (slack-connection.ts), the sends (slack-send.ts).
 */
export function createSlackChannel(
  deps: SlackChannelDeps,
): Channel & { identity(): SlackIdentity | undefined } {
  const { config, logger } = deps;
  const ownerId = config.owner_user_id;
  // Retries are the outbox's: it knows the whole picture (a chat's order, the piece's count).
  const web = new WebClient(deps.botToken || 'xoxb-missing', {
    slackApiUrl: config.api_url,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    logger: {
      debug: () => undefined,
      info: () => undefined,
      warn: () => undefined,
      error: () => undefined,
      setLevel: () => undefined,
      getLevel: () => 'debug' as never,
      setName: () => undefined,
    },
  });
  let host: ChannelHost | undefined;
  let adminChat: string | undefined;
  const titles = new Map<string, string>();

  const connection = createSlackConnection({
    web,
    appToken: deps.appToken,
    apiUrl: config.api_url,
    tokenProblem: deps.tokenProblem,
    logger,
    onStatus(s) {
      host?.onStatus(s);
      if (s.state === 'connected' && adminChat === undefined) void openAdminChat();
    },
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(deps.retryBaseMs ? { retryBaseMs: deps.retryBaseMs } : {}),
  });

  const onMessage = createSlackHandlers({
    ownerId,
    triggerWord: deps.triggerWord,
    botToken: deps.botToken,
    logger,
    host: () => host,
    identity: connection.identity,
    async titleOf(chatId) {
      const known = titles.get(chatId);
      if (known) return known;
      const info = await web.conversations.info({ channel: chatId }).catch((err: unknown) => {
        logger.debug({ err: errorMessage(err), chatId }, 'channel name not known');
        return undefined;
      });
      const name = info?.channel?.name;
      if (name) titles.set(chatId, `#${name}`);
      return name ? `#${name}` : undefined;
    },
    tell(chatId, text) {
      web.chat
        .postMessage({ channel: chatId, text })
        .catch((err: unknown) => logger.warn({ err: errorMessage(err), chatId }, 'could not send a notice'));
    },
  });
  connection.socket.on('message', (envelope: SlackEnvelope) => onMessage(envelope));

  /** The owner's DM with the bot: opened once (conversations.open answers the existing one). */
  async function openAdminChat(): Promise<void> {
    if (ownerId === undefined || connection.status().state !== 'connected') return;
    const res = await web.conversations.open({ users: ownerId }).catch((err: unknown) => {
      logger.warn({ err: errorMessage(err) }, 'could not open the owner’s direct message with the bot');
      return undefined;
    });
    if (res?.channel?.id) adminChat = res.channel.id;
  }

  return {
    name: SLACK_CHANNEL,
    textLimit: SLACK_TEXT_LIMIT,
    identity: connection.identity,

    async start(h: ChannelHost) {
      if (connection.started()) return;
      host = h;
      await connection.start();
      // Known before the first approval needs it; a late connection opens it when it comes up.
      if (adminChat === undefined) await openAdminChat();
    },

    stop: () => connection.stop(),

    status: connection.status,

    async send(piece: OutboundPiece): Promise<SendOutcome> {
      const outcome = await sendPiece(web, piece);
      if (outcome.kind !== 'delivered')
        logger.warn({ chatId: piece.chatId, outcome }, 'slack send not delivered');
      return outcome;
    },

    // Slack shows bots no typing indicator outside its assistant threads: nothing to do.
    setTyping: () => Promise.resolve(),

    async acknowledge(target) {
      if (config.ack_reaction === false) return;
      await web.reactions
        .add({ channel: target.chatId, timestamp: target.externalId, name: config.ack_reaction })
        .catch((err: unknown) => {
          if (platformError(err) === 'already_reacted') return;
          logger.warn({ err: errorMessage(err), chatId: target.chatId }, 'could not acknowledge the message');
        });
    },

    async editText({ chatId, platformId, text }) {
      // A file's comment is not a message Slack lets the bot edit with chat.update.
      if (platformId.startsWith('file:')) return false;
      try {
        await web.chat.update({ channel: chatId, ts: platformId, text });
        return true;
      } catch (err) {
        logger.warn({ err: errorMessage(err), chatId }, 'could not edit a message');
        return false;
      }
    },

    async unsend({ chatId, platformId }) {
      // A file's id is not a message's: Slack deletes files with another call and scope; kept.
      if (platformId.startsWith('file:')) return false;
      try {
        await web.chat.delete({ channel: chatId, ts: platformId });
        return true;
      } catch (err) {
        if (platformError(err) === 'message_not_found') return true;
        logger.warn({ err: errorMessage(err), chatId }, 'could not delete a message');
        return false;
      }
    },

    adminChatId: () => adminChat,
  };
}
