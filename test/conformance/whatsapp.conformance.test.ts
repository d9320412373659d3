import path from 'node:path';
import type { proto } from '@whiskeysockets/baileys';
import pino from 'pino';
import type { Channel, ChannelHost, InboundMessage } from '../../host/channels/channel.ts';
import { createWhatsAppChannel } from '../../host/channels/whatsapp/whatsapp-channel.ts';
import { whatsappConfigSchema } from '../../host/channels/whatsapp/whatsapp-config.ts';
import { whatsappChannelDefinition } from '../../host/channels/whatsapp/whatsapp-definition.ts';
import {
  connectionClosed,
  FAKE_SELF_JID,
  FAKE_SELF_LID,
  groupSendsAtSeam,
  notInGroup,
  seedLinkedAuth,
  startFakeWhatsApp,
  FORWARD_MARK,
  throughProto,
  waMessage,
  whatsappContent,
} from '../fakes/whatsapp-fake.ts';
import { waitFor } from '../helpers/processes.ts';
import { describeChannelConformance } from './channel-conformance.ts';

const GROUP = '120363000000000001@g.us';
// The WhatsApp adapter on a real Baileys socket against crabline's WhatsApp server. Members write through
// the server; what crabline cannot carry goes into Baileys' own event buffer (the self-chat, whose messages
// come from the linked account itself, and contextInfo for mentions and replies); group sends are taken at
// the socket seam, since crabline closes the socket on a group send.
describeChannelConformance(
  'whatsapp (Baileys on crabline)',
  async ({ dir }) => {
    const server = await startFakeWhatsApp(dir);
    const authDir = path.join(dir, 'whatsapp');
    await seedLinkedAuth(authDir);
    // crabline closes the socket on a group send: a marked reply goes on to it, a server dropping on one message.
    const poison = new Map<string, string>();
    const seam = groupSendsAtSeam(undefined, {
      toServer: (text) => [...poison.values()].some((marker) => text.includes(marker)),
    });
    const inner = createWhatsAppChannel({
      config: whatsappConfigSchema.parse({ websocket_url: server.url }),
      dataDir: authDir,
      logger: pino({ level: 'silent' }),
      makeSocket: seam.factory,
      policy: { initialDelayMs: 100, maxDelayMs: 400 },
      sendWaitMs: 3_000,
    });
    // The driver waits for what it wrote to reach the host, as people wait for a message to show.
    const ingested: InboundMessage[] = [];
    const channel: Channel = {
      ...inner,
      name: inner.name,
      textLimit: inner.textLimit,
      async start(host: ChannelHost) {
        await inner.start({
          ...host,
          ingest: (m) => {
            ingested.push(m);
            return host.ingest(m);
          },
          ingestMedia: (m) => {
            ingested.push(m);
            return host.ingestMedia(m);
          },
        });
        await waitFor('connected', () => inner.status().state === 'connected');
      },
    };
    let seq = 0;
    const arrives = async (write: () => Promise<void> | void) => {
      const before = ingested.length;
      await write();
      await waitFor('the message to reach the host', () => ingested.length > before);
    };
    const upsert = (m: Parameters<typeof waMessage>[0]) => {
      inner.socket()?.ev.emit('messages.upsert', { type: 'notify', messages: [waMessage(m)] });
    };
    return {
      channel,
      driver: {
        groupChatId: GROUP,
        memberWrites: (chatId, text, meta) =>
          arrives(() =>
            server.inject({
              chatJid: chatId,
              senderJid: '15551234567@s.whatsapp.net',
              text,
              pushName: meta?.senderName ?? 'Alice',
              messageId: `M${(seq += 1)}`,
            }),
          ),
        ownerWrites: (text) =>
          arrives(() =>
            upsert({
              id: `O${(seq += 1)}`,
              remoteJid: FAKE_SELF_LID,
              remoteJidAlt: FAKE_SELF_JID,
              fromMe: true,
              text,
            }),
          ),
        // WhatsApp marks a forward but does not say who wrote it.
        ownerForwards: (text) =>
          arrives(() =>
            upsert({
              id: `F${(seq += 1)}`,
              remoteJid: FAKE_SELF_JID,
              fromMe: true,
              message: {
                extendedTextMessage: { text, contextInfo: { isForwarded: true, forwardingScore: 1 } },
              },
            }),
          ),
        // Every message goes through WhatsApp's protobuf schema and back. A quote's copy of the quoted
        // message keeps its own context here, as a client that keeps it sends it; one that strips it
        // (Baileys) is fail-closed, proved in test/unit/channels/whatsapp-content-origin.test.ts.
        async ownerSendsContent(kind, shape, words) {
          const quotedContext = shape === 'quote of a forward' ? FORWARD_MARK : {};
          const message: proto.IMessage =
            shape === 'own'
              ? whatsappContent(kind, words)
              : shape === 'forwarded'
                ? whatsappContent(kind, words, FORWARD_MARK)
                : {
                    extendedTextMessage: {
                      text: 'what about this?',
                      contextInfo: {
                        stanzaId: `Q${(seq += 1)}`,
                        participant: FAKE_SELF_JID,
                        quotedMessage: whatsappContent(kind, words, quotedContext),
                      },
                    },
                  };
          const id = `C${(seq += 1)}`;
          await arrives(() => {
            const m = throughProto(waMessage({ id, remoteJid: FAKE_SELF_JID, fromMe: true, message }));
            inner.socket()?.ev.emit('messages.upsert', { type: 'notify', messages: [m] });
          });
          return { quotable: true };
        },
        memberMentionsBot: (chatId, text) =>
          arrives(() =>
            upsert({
              id: `N${(seq += 1)}`,
              remoteJid: chatId,
              participant: '42@lid',
              text,
              mentionedJid: [FAKE_SELF_JID],
            }),
          ),
        memberRepliesTo: (chatId, platformId, text) =>
          arrives(() =>
            upsert({
              id: `R${(seq += 1)}`,
              remoteJid: chatId,
              participant: '15551234567@s.whatsapp.net',
              text,
              quotedId: platformId,
            }),
          ),
        // What the chat shows: the bot's messages, less those it deleted.
        received: async (chatId) =>
          seam.sent
            .filter(
              (s) => s.chatId === chatId && !seam.deletions.some((d) => d.chatId === chatId && d.id === s.id),
            )
            .map((s) => s.text),
        reactionsOn: async (chatId, externalId) =>
          seam.reactions.filter((r) => r.chatId === chatId && r.id === externalId).map((r) => r.text),
        typingSignals: async (chatId) =>
          seam.presences
            .filter((p) => p.chatId === chatId)
            .map((p) => (p.type === 'composing' ? 'on' : 'off')),
        typingLapsesAfterMs: 10_000,
        failNextSend: (chatId) => seam.failNext(chatId, connectionClosed()),
        dropsConnectionOn: (chatId, marker) => void poison.set(chatId, marker),
        async killChat(chatId) {
          for (let i = 0; i < 10; i += 1) seam.failNext(chatId, notInGroup());
        },
        async dropConnection() {
          await server.stop();
          await waitFor('disconnected', () => inner.status().state !== 'connected');
        },
        async restoreConnection() {
          await server.start();
          await waitFor('reconnected', () => inner.status().state === 'connected');
        },
        close: () => server.close().catch(() => undefined),
      },
    };
  },
  {
    capabilities: whatsappChannelDefinition.capabilities,
    timeoutMs: 15_000,
  },
);
