import crypto from 'node:crypto';
import type { AnyMessageContent, WAMessage } from '@whiskeysockets/baileys';
import type { Logger } from '../../logging/logger.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { openAuthStore, type WhatsAppAuthStore } from './auth-store.ts';
import {
  createConnectionController,
  type ConnectionController,
  type ConnectionEvents,
  type ReconnectPolicy,
  type Timers,
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
import { translateInbound, WHATSAPP_CHANNEL } from './inbound-message.ts';
import { isGroupJid, isLidJid, normalizeUserJid, selfIdentity } from './jids.ts';
import { WHATSAPP_WEBSOCKET_URL, type WhatsAppConfig } from './whatsapp-config.ts';
import { fileMessages } from './whatsapp-file-message.ts';
import { whatsappMedia } from './whatsapp-media.ts';

/** The state key under which the channel keeps the last close no reconnect could mend (until it connects again). */
export const LAST_TERMINAL_CLOSE = 'last_terminal_close';
import { markdownToWhatsApp } from './whatsapp-markdown.ts';
import { makeBaileysSocket, type SocketFactory, type WhatsAppSocket } from './whatsapp-socket.ts';

export interface WhatsAppChannelDeps {
  config: WhatsAppConfig;
  /** The channel's own 0700 folder: the linked device's credentials and keys. */
  dataDir: string;
  logger: Logger;
  state?: ChannelStateStore;
  makeSocket?: SocketFactory;
  policy?: Partial<ReconnectPolicy>;
  timers?: Timers;
  /** How long a send waits for a reconnecting socket before the outbox retries it later. */
  sendWaitMs?: number;
}

export interface WhatsAppChannel extends Channel {
  /** Reconnect timers armed now (never more than one). */
  pendingReconnects(): number;
  /** The open socket, for tests at the socket seam. */
  socket(): WhatsAppSocket | undefined;
}

const SENT_IDS_KEPT = 5_000;

interface LiveSocket {
  sock: WhatsAppSocket;
  end(reason: string): void;
  /** Whether this connection has closed (WhatsApp closed it, or the controller left it). */
  closed(): boolean;
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
 * more: upserts become InboundMessages for the host, outbox pieces become WhatsApp messages; the
 * connection's ups and downs become statuses through one connection controller.
 */
export function createWhatsAppChannel(deps: WhatsAppChannelDeps): WhatsAppChannel {
  const log = deps.logger;
  const makeSocket = deps.makeSocket ?? makeBaileysSocket;
  const sendWaitMs = deps.sendWaitMs ?? 20_000;
  // Baileys is chatty at info level; its warnings and errors are what an owner may need.
  const baileysLogger = log.child(
    { subsystem: 'baileys' },
    { level: log.isLevelEnabled('debug') ? log.level : log.isLevelEnabled('warn') ? 'warn' : log.level },
  );

  let host: ChannelHost | undefined;
  let auth: WhatsAppAuthStore | undefined;
  let controller: ConnectionController<LiveSocket> | undefined;
  let blocked: ChannelStatus | undefined; // needs-login, or an auth folder that cannot be read
  let inbound: Promise<void> = Promise.resolve();
  const lanes = new Map<string, Promise<void>>();
  // Media is fetched from WhatsApp's media hosts, or from the test server `websocket_url` points at.
  const testServerHost =
    deps.config.websocket_url === WHATSAPP_WEBSOCKET_URL
      ? undefined
      : new URL(deps.config.websocket_url).hostname;

  /** One chain per chat: its messages reach the host in order, and a slow download holds only its chat. */
  const onLane = (chatId: string, task: () => Promise<void>) => {
    const next = (lanes.get(chatId) ?? Promise.resolve())
      .then(task)
      .catch((err: unknown) => log.error({ err, chatId }, 'storing a WhatsApp message failed'));
    lanes.set(chatId, next);
    void next.then(() => {
      if (lanes.get(chatId) === next) lanes.delete(chatId);
    });
  };
  const sentIds = new Map<string, true>();
  const titles = new Map<string, string>();

  const self = () => selfIdentity(auth?.state.creds.me);

  const rememberSent = (id: string) => {
    sentIds.set(id, true);
    const oldest = sentIds.keys().next();
    if (sentIds.size > SENT_IDS_KEPT && !oldest.done) sentIds.delete(oldest.value);
  };
  const isOwnMessage = (chatId: string, id: string) =>
    sentIds.has(id) || (host?.isOwnMessage(chatId, id) ?? false);

  const seeChat = (chatId: string, title: string | null | undefined) => {
    if (!title?.trim() || !isGroupJid(chatId)) return;
    titles.set(chatId, title);
    host?.onChatSeen({ chatId, title });
  };

  /** Group names at connect and whenever WhatsApp says they changed, for `carapace chats`. */
  const syncGroups = async (sock: WhatsAppSocket) => {
    try {
      const groups = await sock.groupFetchAllParticipating();
      for (const [id, meta] of Object.entries(groups)) seeChat(id, meta.subject);
    } catch (err) {
      log.debug({ err }, 'could not list WhatsApp groups');
    }
  };

  const handleUpsert = async (sock: WhatsAppSocket, messages: WAMessage[], type: string) => {
    const me = self();
    const h = host;
    if (!me || !h) return;
    // Baileys knows many LID → phone mappings; a LID it cannot map stays the sender's id.
    const lidPhones = new Map<string, string>();
    for (const m of messages) {
      const key = m.key as { participant?: string | null; participantAlt?: string };
      if (isLidJid(key.participant) && !key.participantAlt) {
        const lid = normalizeUserJid(key.participant);
        if (!lid || lidPhones.has(lid)) continue;
        const phone = await sock.signalRepository.lidMapping.getPNForLID(lid).catch(() => null);
        if (phone) lidPhones.set(lid, phone);
      }
    }
    for (const m of messages) {
      const decision = translateInbound(m, {
        self: me,
        isOwnMessage,
        groupTitle: (id) => titles.get(id),
        phoneForLid: (lid) => lidPhones.get(lid),
      });
      if (decision.kind === 'skip') {
        log.trace(
          { id: m.key.id, chat: m.key.remoteJid, type, why: decision.reason },
          'WhatsApp message skipped',
        );
        continue;
      }
      const message = decision.message;
      const spec = decision.media;
      // On the chat's lane: a file is fetched before the chat's next message is taken in, while other
      // chats go on.
      onLane(message.chatId, async () => {
        const result = spec
          ? await h.ingestMedia({ ...message, media: whatsappMedia(spec, testServerHost) })
          : h.ingest(message);
        log.debug(
          { id: message.externalId, type, stored: result.stored, triggered: result.triggered },
          spec ? `WhatsApp ${spec.kind}` : 'WhatsApp message',
        );
      });
    }
  };

  const connect = (events: ConnectionEvents): LiveSocket => {
    if (!auth) throw new Error('WhatsApp auth state is not open');
    const store = auth;
    const sock = makeSocket({ auth: store.state, url: deps.config.websocket_url, logger: baileysLogger });
    let closed = false;
    sock.ev.on('connection.update', (u) => {
      if (u.qr) {
        // Only an unlinked device is offered a QR code: the host cannot link it, `whatsapp login` can.
        events.closed(401, 'WhatsApp offered a QR code: this device is not linked');
        return;
      }
      if (u.connection === 'open') {
        events.opened();
        void syncGroups(sock);
      } else if (u.connection === 'close') {
        closed = true;
        const err = u.lastDisconnect?.error;
        events.closed(closeStatusCode(err), err?.message ?? 'connection closed');
      }
    });
    sock.ev.on('creds.update', () => {
      store.saveCreds().catch((err: unknown) => log.error({ err }, 'saving WhatsApp credentials failed'));
    });
    sock.ev.on('messages.upsert', ({ messages, type }) => {
      // One at a time, in arrival order: the host stores them as they come.
      inbound = inbound
        .then(() => handleUpsert(sock, messages, type))
        .catch((err: unknown) => log.error({ err }, 'handling WhatsApp messages failed'));
    });
    sock.ev.on('groups.upsert', (groups) => {
      for (const g of groups) seeChat(g.id, g.subject);
    });
    sock.ev.on('groups.update', (updates) => {
      for (const g of updates) if (g.id && g.subject) seeChat(g.id, g.subject);
    });
    sock.ws.on('frame', () => events.activity());
    return {
      sock,
      end: (reason: string) => {
        closed = true;
        void sock.end(new Error(reason));
      },
      closed: () => closed,
    };
  };

  const statusNow = (): ChannelStatus =>
    blocked ??
    controller?.status() ?? { state: 'stopped', reason: 'not started', since: new Date().toISOString() };

  const channel: WhatsAppChannel = {
    name: WHATSAPP_CHANNEL,
    textLimit: deps.config.chunk_size,

    async start(h: ChannelHost) {
      host = h;
      // The host runs on without WhatsApp; status, doctor and the other admin chats say what to do.
      const block = (state: ChannelStatus['state'], reason: string) => {
        blocked = { state, reason, since: new Date().toISOString() };
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
        connect,
        onStatus: (s) => {
          // Doctor shows a close no reconnect could mend until the channel connects again.
          if (s.state === 'connected') deps.state?.set(LAST_TERMINAL_CLOSE, '');
          h.onStatus(s);
        },
        onTerminal: (v) =>
          deps.state?.set(
            LAST_TERMINAL_CLOSE,
            JSON.stringify({ reason: v.reason, at: new Date().toISOString() }),
          ),
        logger: log,
        ...(deps.policy ? { policy: deps.policy } : {}),
        ...(deps.timers ? { timers: deps.timers } : {}),
      });
      controller = c;
      c.start();
    },

    async stop() {
      controller?.stop('host stopping');
      await inbound;
      await Promise.all(lanes.values());
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
      for (const id of ids) rememberSent(id);
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

    async setTyping(chatId: string, on: boolean) {
      const live = controller?.current();
      if (!live) return;
      await live.sock.sendPresenceUpdate(on ? 'composing' : 'paused', chatId).catch((err: unknown) => {
        log.debug({ err, chatId }, 'typing indicator failed');
      });
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
