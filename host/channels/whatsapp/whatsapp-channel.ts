import crypto from 'node:crypto';
import type { AnyMessageContent } from '@whiskeysockets/baileys';
import type { Logger } from '../../logging/logger.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { systemClock, type Clock } from '../../time/clock.ts';
import { openAuthStore, type WhatsAppAuthStore } from './auth-store.ts';
import {
  createConnectionController,
  type ConnectionController,
  type ReconnectPolicy,
} from './connection-controller.ts';
import type {
  Channel,
  ChannelHost,
  ChannelStateStore,
  ChannelStatus,
  OutboundPiece,
  SendOutcome,
} from '../channel.ts';
import { closeStatusCode } from './disconnect-reason.ts';
import { WHATSAPP_CHANNEL } from './inbound-message.ts';
import { selfIdentity } from './jids.ts';
import { WHATSAPP_WEBSOCKET_URL, type WhatsAppConfig } from './whatsapp-config.ts';
import { whatsappConnector, type LiveSocket } from './whatsapp-connection.ts';
import { fileMessages } from './whatsapp-file-message.ts';
import { createWhatsAppHandlers } from './whatsapp-handlers.ts';
import { markdownToWhatsApp } from './whatsapp-markdown.ts';
import { makeBaileysSocket, type SocketFactory, type WhatsAppSocket } from './whatsapp-socket.ts';

/** The state key under which the channel keeps the last close no reconnect could mend (until it connects again). */
/** WhatsApp shows "typing…" (composing) for about 10 s after one update; the host renews it sooner. */
const TYPING_RENEW_MS = 8_000;

export const LAST_TERMINAL_CLOSE = 'last_terminal_close';

export interface WhatsAppChannelDeps {
  config: WhatsAppConfig;
  /** The channel's own 0700 folder: the linked device's credentials and keys. */
  dataDir: string;
  logger: Logger;
  state?: ChannelStateStore;
  makeSocket?: SocketFactory;
  policy?: Partial<ReconnectPolicy>;
  /** The host's clock: reconnects, the silent-socket watchdog, a send's wait and the statuses' times. */
  clock?: Clock;
  /** Draws the reconnect backoff's jitter. */
  random?: () => number;
  /** How long a send waits for a reconnecting socket before the outbox retries it later. */
  sendWaitMs?: number;
}

export interface WhatsAppChannel extends Channel {
  /** Reconnect timers armed now (never more than one). */
  pendingReconnects(): number;
  /** The open socket, for tests at the socket seam. */
  socket(): WhatsAppSocket | undefined;
}

/**
 * `3EB0` + 18 hex digits like WhatsApp Web's ids, derived from the piece's key (unique to this install and
 * stable across its re-sends, see OutboundPiece): a retried send reuses its id.
 */
export function messageIdFor(sendKey: string): string {
  return `3EB0${crypto.createHash('sha256').update(`carapace:${sendKey}`).digest('hex').slice(0, 18).toUpperCase()}`;
}

/**
 * The WhatsApp channel: the owner's own account as a linked device (Baileys). It translates and nothing
 * more. This wires the parts: what arrives (whatsapp-handlers.ts), the socket each connection opens
 * (whatsapp-connection.ts), the one controller that decides when to (re)connect and turns the
 * connection's ups and downs into statuses (connection-controller.ts), and the sending side here.
 */
export function createWhatsAppChannel(deps: WhatsAppChannelDeps): WhatsAppChannel {
  const log = deps.logger;
  const clock = deps.clock ?? systemClock;
  const sendWaitMs = deps.sendWaitMs ?? 20_000;
  const isoNow = () => new Date(clock.now()).toISOString();

  let host: ChannelHost | undefined;
  let auth: WhatsAppAuthStore | undefined;
  let controller: ConnectionController<LiveSocket> | undefined;
  let blocked: ChannelStatus | undefined; // needs-login, or an auth folder that cannot be read
  const self = () => selfIdentity(auth?.state.creds.me);
  const handlers = createWhatsAppHandlers({
    logger: log,
    host: () => host,
    self,
    // Media is fetched from WhatsApp's media hosts, or from the test server `websocket_url` points at.
    testServerHost:
      deps.config.websocket_url === WHATSAPP_WEBSOCKET_URL
        ? undefined
        : new URL(deps.config.websocket_url).hostname,
  });

  const statusNow = (): ChannelStatus =>
    blocked ?? controller?.status() ?? { state: 'stopped', reason: 'not started', since: isoNow() };

  const channel: WhatsAppChannel = {
    name: WHATSAPP_CHANNEL,
    textLimit: deps.config.chunk_size,

    async start(h: ChannelHost) {
      host = h;
      // The host runs on without WhatsApp; status, doctor and the other admin chats say what to do.
      const block = (state: ChannelStatus['state'], reason: string) => {
        blocked = { state, reason, since: isoNow() };
        h.onStatus(blocked);
      };
      if (!deps.config.enabled) return block('stopped', 'disabled ([channels.whatsapp] enabled = false)');
      try {
        auth = openAuthStore(deps.dataDir);
      } catch (err) {
        return block('stopped', errorMessage(err));
      }
      if (!auth.isLinked()) {
        return block(
          'needs-login',
          'WhatsApp is not linked: stop the host, run `carapace whatsapp login`, then start it again',
        );
      }
      const c = createConnectionController<LiveSocket>({
        connect: whatsappConnector({
          auth,
          makeSocket: deps.makeSocket ?? makeBaileysSocket,
          url: deps.config.websocket_url,
          logger: log,
          handlers,
        }),
        onStatus: (s) => {
          // Doctor shows a close no reconnect could mend until the channel connects again.
          if (s.state === 'connected') deps.state?.set(LAST_TERMINAL_CLOSE, '');
          h.onStatus(s);
        },
        onTerminal: (v) =>
          deps.state?.set(LAST_TERMINAL_CLOSE, JSON.stringify({ reason: v.reason, at: isoNow() })),
        logger: log,
        clock,
        ...(deps.policy ? { policy: deps.policy } : {}),
        ...(deps.random ? { random: deps.random } : {}),
      });
      controller = c;
      c.start();
    },

    async stop() {
      controller?.stop('host stopping');
      await handlers.settled();
      await auth?.flush().catch((err: unknown) => log.error({ err }, 'saving WhatsApp credentials failed'));
      host = undefined;
    },

    status: statusNow,

    async send(piece: OutboundPiece): Promise<SendOutcome> {
      let contents: AnyMessageContent[];
      try {
        contents = piece.attachment
          ? await fileMessages(piece.attachment, piece.text)
          : // linkPreview null: Baileys would otherwise fetch any URL in the text from this machine.
            [{ text: markdownToWhatsApp(piece.text), linkPreview: null }];
      } catch (err) {
        // The host's approved copy is gone: no retry can bring it back.
        return { kind: 'permanent', reason: `the file to send cannot be read (${errorMessage(err)})` };
      }
      const live = await (controller?.whenOpen(sendWaitMs) ?? Promise.resolve(undefined));
      if (!live) {
        const s = statusNow();
        return { kind: 'retry', reason: `WhatsApp is ${s.state}${s.reason ? `: ${s.reason}` : ''}` };
      }
      // One id per WhatsApp message (a voice note and its text are two), each derived from the piece's key:
      // a retry re-sends under the same ids, as a text's retry does.
      const ids = contents.map((_, i) => messageIdFor(i === 0 ? piece.sendKey : `${piece.sendKey}#${i}`));
      // Recorded before the send: Baileys echoes our own message as an upsert before sendMessage returns.
      for (const id of ids) handlers.rememberSent(id);
      try {
        for (const [i, content] of contents.entries())
          await live.sock.sendMessage(piece.chatId, content, { messageId: ids[i] as string });
        return { kind: 'delivered', platformIds: ids };
      } catch (err) {
        // Baileys rejects a send cut off by the socket closing with the close code itself (a number):
        // either way the connection went down with this message, which the outbox counts per piece.
        if (live.closed() || typeof err === 'number') {
          return {
            kind: 'connection-lost',
            reason: `WhatsApp closed the connection during the send (${errorMessage(err)})`,
          };
        }
        return sendFailure(err);
      }
    },

    typingRenewMs: TYPING_RENEW_MS,

    async setTyping(chatId: string, on: boolean) {
      const live = controller?.current();
      if (!live) return;
      await live.sock.sendPresenceUpdate(on ? 'composing' : 'paused', chatId).catch((err: unknown) => {
        log.debug({ err, chatId }, 'typing indicator failed');
      });
    },

    async acknowledge({ chatId, externalId, senderId, fromOwner }) {
      const emoji = deps.config.ack_reaction;
      const live = controller?.current();
      if (emoji === false || !live) return;
      // A reaction names its message by key: in a group, with who wrote it; in the self-chat, our own.
      const key = fromOwner
        ? { remoteJid: chatId, id: externalId, fromMe: true }
        : { remoteJid: chatId, id: externalId, fromMe: false, participant: senderId };
      await live.sock.sendMessage(chatId, { react: { text: emoji, key } }).catch((err: unknown) => {
        log.warn({ err: errorMessage(err), chatId }, 'could not acknowledge the message');
      });
    },

    async editText({ chatId, platformId, text }) {
      const live = controller?.current();
      if (!live) return false;
      // An edit travels as a message of its own: its echo must be known as ours, as a send's is.
      const id = messageIdFor(`edit:${platformId}:${crypto.randomUUID()}`);
      handlers.rememberSent(id);
      try {
        await live.sock.sendMessage(
          chatId,
          { text: markdownToWhatsApp(text), edit: { remoteJid: chatId, id: platformId, fromMe: true } },
          { messageId: id },
        );
        return true;
      } catch (err) {
        log.warn({ err: errorMessage(err), chatId }, 'could not edit the message');
        return false;
      }
    },

    async unsend({ chatId, platformId }) {
      const live = controller?.current();
      if (!live) return false;
      try {
        await live.sock.sendMessage(chatId, { delete: { remoteJid: chatId, id: platformId, fromMe: true } });
        return true;
      } catch (err) {
        log.warn({ err: errorMessage(err), chatId }, 'could not delete the message');
        return false;
      }
    },

    adminChatId: () => self()?.phone,
    pendingReconnects: () => controller?.pendingReconnects() ?? 0,
    socket: () => controller?.current()?.sock,
  };
  return channel;
}

/** WhatsApp's answer to a send, as the outbox's outcome: only a chat that is gone is permanent. */
function sendFailure(err: unknown): SendOutcome {
  const code = closeStatusCode(err);
  const message = errorMessage(err);
  if (code === 403 || code === 404 || /item-not-found|not-authorized|forbidden/i.test(message)) {
    return {
      kind: 'permanent',
      reason: `WhatsApp refused the message (${message}); is the account still in this group?`,
    };
  }
  return { kind: 'retry', reason: `WhatsApp send failed: ${message}` };
}
