import type { WAMessage } from '@whiskeysockets/baileys';
import type { Logger } from '../../logging/logger.ts';
import type { ChannelHost } from '../channel.ts';
import { translateInbound } from './inbound-message.ts';
import { isGroupJid, isLidJid, normalizeUserJid, type SelfIdentity } from './jids.ts';
import { whatsappMedia } from './whatsapp-media.ts';
import type { WhatsAppSocket } from './whatsapp-socket.ts';

const SENT_IDS_KEPT = 5_000;

export interface WhatsAppHandlersDeps {
  logger: Logger;
  /** The host once the channel started; messages before that are dropped. */
  host(): ChannelHost | undefined;
  /** The linked account, once its credentials are open; messages before that are dropped. */
  self(): SelfIdentity | undefined;
  /** Media is fetched from WhatsApp's media hosts, or from this test server's host when set. */
  testServerHost: string | undefined;
}

export interface WhatsAppHandlers {
  /** A `messages.upsert`: taken in after the previous one, each message on its chat's lane. */
  upsert(sock: WhatsAppSocket, messages: WAMessage[], type: string): void;
  /** A group's name, from a group event or the list at connect. */
  seeChat(chatId: string, title: string | null | undefined): void;
  /** Group names at connect, for `carapace chats`. */
  syncGroups(sock: WhatsAppSocket): Promise<void>;
  /** Records an id the channel is about to send: Baileys echoes it back as an upsert. */
  rememberSent(id: string): void;
  /** Resolves once every upsert taken in so far has reached the host. */
  settled(): Promise<void>;
}

/**
 * What the channel does with what WhatsApp sends: upserts become InboundMessages for the host, one chain
 * per chat so its messages arrive in order and a slow download holds only its chat; its own sends echoed
 * back are skipped; group names are passed on as the host sees chats.
 */
export function createWhatsAppHandlers(deps: WhatsAppHandlersDeps): WhatsAppHandlers {
  const log = deps.logger;
  let inbound: Promise<void> = Promise.resolve();
  const lanes = new Map<string, Promise<void>>();
  const sentIds = new Map<string, true>();
  const titles = new Map<string, string>();

  const onLane = (chatId: string, task: () => Promise<void>) => {
    const next = (lanes.get(chatId) ?? Promise.resolve())
      .then(task)
      .catch((err: unknown) => log.error({ err, chatId }, 'storing a WhatsApp message failed'));
    lanes.set(chatId, next);
    void next.then(() => {
      if (lanes.get(chatId) === next) lanes.delete(chatId);
    });
  };

  const isOwnMessage = (chatId: string, id: string) =>
    sentIds.has(id) || (deps.host()?.isOwnMessage(chatId, id) ?? false);

  const seeChat = (chatId: string, title: string | null | undefined) => {
    if (!title?.trim() || !isGroupJid(chatId)) return;
    titles.set(chatId, title);
    deps.host()?.onChatSeen({ chatId, title });
  };

  /** Baileys knows many LID → phone mappings; a LID it cannot map stays the sender's id. */
  const phonesForLids = async (sock: WhatsAppSocket, messages: WAMessage[]) => {
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
    return lidPhones;
  };

  const handleUpsert = async (sock: WhatsAppSocket, messages: WAMessage[], type: string) => {
    const me = deps.self();
    const h = deps.host();
    if (!me || !h) return;
    const lidPhones = await phonesForLids(sock, messages);
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
          ? await h.ingestMedia({ ...message, media: whatsappMedia(spec, deps.testServerHost) })
          : h.ingest(message);
        log.debug(
          { id: message.externalId, type, stored: result.stored, triggered: result.triggered },
          spec ? `WhatsApp ${spec.kind}` : 'WhatsApp message',
        );
      });
    }
  };

  return {
    upsert(sock, messages, type) {
      // One at a time, in arrival order: the host stores them as they come.
      inbound = inbound
        .then(() => handleUpsert(sock, messages, type))
        .catch((err: unknown) => log.error({ err }, 'handling WhatsApp messages failed'));
    },
    seeChat,
    async syncGroups(sock) {
      try {
        const groups = await sock.groupFetchAllParticipating();
        for (const [id, meta] of Object.entries(groups)) seeChat(id, meta.subject);
      } catch (err) {
        log.debug({ err }, 'could not list WhatsApp groups');
      }
    },
    rememberSent(id) {
      sentIds.set(id, true);
      const oldest = sentIds.keys().next();
      if (sentIds.size > SENT_IDS_KEPT && !oldest.done) sentIds.delete(oldest.value);
    },
    async settled() {
      await inbound;
      await Promise.all(lanes.values());
    },
  };
}
