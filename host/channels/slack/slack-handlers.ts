import type { Logger } from '../../logging/logger.ts';
import type { ChannelHost } from '../channel.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { decideInbound, slackMessageEventSchema, type SlackIdentity } from './slack-inbound.ts';
import { slackMedia } from './slack-media.ts';

const REFUSAL = 'This is a private assistant: it only talks to its owner here.';

export interface SlackHandlersDeps {
  ownerId: string | undefined;
  triggerWord: string;
  botToken: string;
  logger: Logger;
  /** The host once the channel started; events before that are not acknowledged, so Slack sends them again. */
  host(): ChannelHost | undefined;
  identity(): SlackIdentity | undefined;
  /** A channel's name (conversations.info), remembered per process; undefined when Slack would not say. */
  titleOf(chatId: string): Promise<string | undefined>;
  /** A courtesy reply (refusal): never awaited by a lane, never fatal. */
  tell(chatId: string, text: string): void;
}

/** One Socket Mode envelope as the SDK hands it to a listener. */
export interface SlackEnvelope {
  event: unknown;
  ack(): Promise<void>;
}

/**
 * What the bot does with each `message` event, on lanes: one per conversation, so a chat's messages reach
 * the host in order (a file is fetched before the chat's next message is taken in), and the owner's DM is
 * a conversation of its own. The envelope is acknowledged once the host has the message: an envelope
 * Slack sees unacknowledged it delivers again, and the host drops the repeat by its ts.
 */
export function createSlackHandlers(deps: SlackHandlersDeps): (envelope: SlackEnvelope) => void {
  const { logger } = deps;
  const lanes = new Map<string, Promise<void>>();
  const refused = new Set<string>();

  async function handle(envelope: SlackEnvelope): Promise<void> {
    const host = deps.host();
    const bot = deps.identity();
    if (!host || !bot) return;
    const parsed = slackMessageEventSchema.safeParse(envelope.event);
    if (!parsed.success) {
      logger.debug({ err: parsed.error.message }, 'slack event ignored: not a message as expected');
      await envelope.ack();
      return;
    }
    const e = parsed.data;
    const decision = decideInbound(e, bot, {
      ownerId: deps.ownerId,
      triggerWord: deps.triggerWord,
      isOwnMessage: host.isOwnMessage,
    });
    switch (decision.kind) {
      case 'ignore':
        logger.debug({ chatId: e.channel, reason: decision.reason }, 'slack message ignored');
        break;
      case 'refuse':
        if (!refused.has(decision.userId)) {
          refused.add(decision.userId);
          deps.tell(decision.chatId, REFUSAL);
        }
        logger.info({ userId: decision.userId }, 'direct message from someone other than the owner refused');
        break;
      case 'ingest': {
        const m = decision.message;
        if (!m.fromOwner) {
          const title = await deps.titleOf(m.chatId);
          if (title) {
            m.chatTitle = title;
            host.onChatSeen({ chatId: m.chatId, title });
          }
        }
        if (decision.file) await host.ingestMedia({ ...m, media: slackMedia(decision.file, deps.botToken) });
        else host.ingest(m);
        break;
      }
    }
    await envelope.ack();
  }

  return (envelope) => {
    const chat = (envelope.event as { channel?: unknown }).channel;
    const lane = typeof chat === 'string' ? chat : '';
    const next = (lanes.get(lane) ?? Promise.resolve())
      .then(() => handle(envelope))
      .catch((err: unknown) => logger.error({ err: errorMessage(err), chatId: lane }, 'slack event failed'));
    lanes.set(lane, next);
    void next.then(() => {
      if (lanes.get(lane) === next) lanes.delete(lane);
    });
  };
}
