/**
 * A WhatsApp server for tests: crabline's `startWhatsAppServer` (it completes Baileys' Noise handshake,
 * injects group and direct messages, records what the client sends, and restarts on the same port), plus
 * what it leaves to us: auth state seeded as a finished pairing would leave it (crabline never pairs, and
 * Baileys refuses to send without `creds.me`).
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  generateWAMessageContent,
  type AnyMessageContent,
  proto,
  type WAMediaUploadFunction,
  type WAMessage,
} from '@whiskeysockets/baileys';
import { startWhatsAppServer, type StartedWhatsAppServer } from '@openclaw/crabline';
import type { ContentKind } from '../conformance/channel-conformance.ts';
import { openAuthStore } from '../../host/channels/whatsapp/auth-store.ts';
import {
  makeBaileysSocket,
  type SocketFactory,
  type WhatsAppSocket,
} from '../../host/channels/whatsapp/whatsapp-socket.ts';

export const FAKE_SELF_PHONE = '15550000000';
export const FAKE_SELF_JID = `${FAKE_SELF_PHONE}@s.whatsapp.net`;
/** crabline announces the account's LID with the phone's digits. */
export const FAKE_SELF_LID = `${FAKE_SELF_PHONE}@lid`;

export interface FakeWhatsApp {
  /** Stops the server (clients see their socket close and cannot reconnect until `start`). */
  stop(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
  url: string;
  /**
   * Injects a message from someone else (crabline refuses the linked account itself): text, or an audio
   * file that crabline encrypts, serves from its own media route and points the message at.
   */
  inject(m: {
    chatJid: string;
    senderJid: string;
    text?: string;
    audio?: { bytes: Buffer; mimeType: string; ptt?: boolean };
    pushName?: string;
    messageId?: string;
  }): Promise<void>;
  /** Stops the server and starts it again on the same port (clients see their socket close). */
  restart(): Promise<void>;
  /** What the client sent and crabline could decrypt (direct and self-chat messages). */
  sentTexts(): { to: string; id: string; text: string }[];
  close(): Promise<void>;
}

export async function startFakeWhatsApp(dir: string): Promise<FakeWhatsApp> {
  const recorderPath = path.join(dir, 'crabline.jsonl');
  let server: StartedWhatsAppServer = await startWhatsAppServer({ recorderPath, selfJid: FAKE_SELF_JID });
  const port = Number(new URL(server.manifest.baseUrl).port);
  const adminToken = server.manifest.adminToken;
  const accessToken = server.manifest.accessToken;
  const start = async () => {
    server = await startWhatsAppServer({
      recorderPath,
      selfJid: FAKE_SELF_JID,
      port,
      adminToken,
      accessToken,
    });
  };
  return {
    url: server.manifest.endpoints.baileysWebSocketUrl,
    stop: () => server.close(),
    start,
    async inject({ audio, ...m }) {
      const body = audio
        ? {
            ...m,
            audio: {
              contentBase64: audio.bytes.toString('base64'),
              mimeType: audio.mimeType,
              ptt: audio.ptt,
            },
          }
        : m;
      const res = await fetch(server.manifest.endpoints.adminInboundUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
        body: JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`crabline refused the message: ${res.status} ${await res.text()}`);
    },
    async restart() {
      await server.close();
      await start();
    },
    sentTexts() {
      if (!fs.existsSync(recorderPath)) return [];
      const out: { to: string; id: string; text: string }[] = [];
      for (const line of fs.readFileSync(recorderPath, 'utf8').split('\n')) {
        if (!line.trim()) continue;
        const body = (JSON.parse(line) as { body?: Partial<WAMessage> }).body;
        const text = body?.message?.conversation;
        if (body?.key?.fromMe && typeof text === 'string' && body.key.remoteJid && body.key.id) {
          out.push({ to: body.key.remoteJid, id: body.key.id, text });
        }
      }
      return out;
    },
    close: () => server.close(),
  };
}

/** Auth state as a finished pairing and first sync leave it: the account's id and LID, the device registered. */
export async function seedLinkedAuth(authDir: string): Promise<void> {
  const auth = openAuthStore(authDir);
  auth.state.creds.me = {
    id: `${FAKE_SELF_PHONE}:1@s.whatsapp.net`,
    lid: `${FAKE_SELF_PHONE}:1@lid`,
    name: 'Owner',
  };
  auth.state.creds.registered = true;
  // A linked device has had its first history sync; without this Baileys holds every event for 20 s
  // waiting for a sync crabline never sends.
  auth.state.creds.accountSyncCounter = 1;
  await auth.saveCreds();
  await auth.flush();
}

/** A message as Baileys would upsert it, for what crabline cannot send (the self-chat, mentions, replies). */
export function waMessage(m: {
  id: string;
  remoteJid: string;
  remoteJidAlt?: string;
  fromMe?: boolean;
  participant?: string;
  participantAlt?: string;
  pushName?: string;
  text?: string;
  mentionedJid?: string[];
  quotedId?: string;
  message?: WAMessage['message'];
}): WAMessage {
  const contextInfo =
    m.mentionedJid || m.quotedId
      ? {
          ...(m.mentionedJid ? { mentionedJid: m.mentionedJid } : {}),
          ...(m.quotedId ? { stanzaId: m.quotedId } : {}),
        }
      : undefined;
  return {
    key: {
      id: m.id,
      remoteJid: m.remoteJid,
      fromMe: m.fromMe ?? false,
      ...(m.remoteJidAlt ? { remoteJidAlt: m.remoteJidAlt } : {}),
      ...(m.participant ? { participant: m.participant } : {}),
      ...(m.participantAlt ? { participantAlt: m.participantAlt } : {}),
    },
    messageTimestamp: Math.floor(Date.now() / 1000),
    pushName: m.pushName ?? 'Someone',
    message:
      m.message ??
      (contextInfo
        ? { extendedTextMessage: { text: m.text ?? '', contextInfo } }
        : { conversation: m.text ?? '' }),
  } as WAMessage;
}

/**
 * The message as the wire carries it: encoded with WhatsApp's own protobuf schema (Baileys' `proto`) and
 * decoded again, so a test sees what Baileys hands the adapter (absent fields, Long timestamps, bytes).
 */
export function throughProto(m: WAMessage): WAMessage {
  const encoded = proto.WebMessageInfo.encode(proto.WebMessageInfo.fromObject(m)).finish();
  return proto.WebMessageInfo.decode(encoded) as WAMessage;
}

/** WhatsApp's mark on a forward's context. */
export const FORWARD_MARK = { isForwarded: true, forwardingScore: 1 };

/** A file as a WhatsApp message carries it: where it is and its key (never fetched by these tests). */
const file = (mimetype: string) => ({
  url: 'https://mmg.whatsapp.net/v/t62.7118-24/file.enc',
  directPath: '/v/t62.7118-24/file.enc',
  mediaKey: new Uint8Array(32).fill(7),
  fileLength: 3,
  mimetype,
});

/** A message of `kind` with `words` in its free-text parts, carrying `contextInfo` where it has one. */
export function whatsappContent(
  kind: ContentKind,
  words: string,
  contextInfo?: proto.IContextInfo,
): proto.IMessage {
  const here = { degreesLatitude: 52.37, degreesLongitude: 4.89 };
  const vcard = `BEGIN:VCARD\nVERSION:3.0\nFN:${words}\nTEL:+15550001111\nEND:VCARD`;
  switch (kind) {
    case 'text':
      return contextInfo ? { extendedTextMessage: { text: words, contextInfo } } : { conversation: words };
    case 'caption':
      return { imageMessage: { ...file('image/jpeg'), caption: words, contextInfo } };
    case 'location':
      return { locationMessage: { ...here, name: words, address: words, contextInfo } };
    case 'live location':
      return { liveLocationMessage: { ...here, caption: words, sequenceNumber: 1, contextInfo } };
    case 'contact':
      return { contactMessage: { displayName: words, vcard, contextInfo } };
    case 'contacts':
      return {
        contactsArrayMessage: { displayName: words, contacts: [{ displayName: words, vcard }], contextInfo },
      };
    case 'poll':
      return {
        pollCreationMessageV3: {
          name: words,
          options: [{ optionName: 'yes' }],
          selectableOptionsCount: 1,
          contextInfo,
        },
      };
    case 'document':
      return {
        documentMessage: {
          ...file('application/pdf'),
          fileName: `${words}.pdf`,
          caption: words,
          contextInfo,
        },
      };
    case 'voice note':
      return { audioMessage: { ...file('audio/ogg; codecs=opus'), ptt: true, seconds: 2, contextInfo } };
  }
}

export interface SeamOptions {
  /**
   * Group sends that go on to the server after all. crabline drops the connection on a group send, so a
   * text chosen here makes a server that drops the connection on that one message (a poison reply).
   */
  toServer?(text: string): boolean;
  /**
   * Where a group send's file goes: the seam builds the message as Baileys' sendMessage does (encrypting
   * the file and uploading it here) and records it, so a test can fetch the file as a recipient would.
   */
  upload?: WAMediaUploadFunction;
}

/** One group send taken at the seam. `message`: what Baileys built from `content`, when the seam uploads. */
export interface SeamSend {
  chatId: string;
  id: string;
  text: string;
  content: AnyMessageContent;
  message?: proto.IMessage;
}

/**
 * Group sends asserted at the socket seam: crabline closes the socket on a group send, so a real Baileys
 * socket is built and only its `sendMessage` to `@g.us` chats is recorded here instead of sent. Failures
 * are shaped as Baileys throws them (an error with a Boom `output.statusCode`).
 */
/** A reaction, delete or edit taken at the seam: the chat, the message it names, the emoji or new text. */
export interface SeamMark {
  chatId: string;
  id: string;
  text: string;
}

/** An edit is text only: Baileys never uploads for one. */
const noUpload: WAMediaUploadFunction = () => Promise.reject(new Error('an edit carries no file'));

export function groupSendsAtSeam(base: SocketFactory = makeBaileysSocket, seamOpts: SeamOptions = {}) {
  const sent: SeamSend[] = [];
  const failures = new Map<string, { err: Error; when?: (content: AnyMessageContent) => boolean }[]>();
  const sockets: WhatsAppSocket[] = [];
  /** Reactions the channel sent (`text` the emoji) and deletes for everyone, with the message they name. */
  const reactions: SeamMark[] = [];
  const deletions: SeamMark[] = [];
  /** Edits of the bot's messages (`text` the new text), with the message they name. */
  const edits: SeamMark[] = [];
  /** Presence updates the channel sent (composing, paused), with their chat. */
  const presences: { chatId: string; type: string }[] = [];
  const factory: SocketFactory = (opts) => {
    const sock = base(opts);
    const real = sock.sendMessage.bind(sock);
    sock.sendMessage = (async (jid: string, content: AnyMessageContent, options?: { messageId?: string }) => {
      // An edit changes the text the chat shows for the message it names, wherever it was sent.
      // Read back from the message Baileys builds for it, so the seam shows what WhatsApp would be sent.
      if ('edit' in content && content.edit) {
        const built = await generateWAMessageContent(content, { upload: seamOpts.upload ?? noUpload });
        const edit = built.protocolMessage;
        if (edit?.type !== proto.Message.ProtocolMessage.Type.MESSAGE_EDIT || !edit.key?.fromMe)
          throw new Error('the seam got an edit Baileys does not build as an edit of our own message');
        const text = edit.editedMessage?.conversation ?? edit.editedMessage?.extendedTextMessage?.text ?? '';
        const target = sent.find((s) => s.chatId === jid && s.id === edit.key?.id);
        if (target) target.text = text;
        edits.push({ chatId: jid, id: edit.key.id ?? '', text });
        return undefined;
      }
      // Reactions and deletes are messages on the wire, but not ones the chat shows as the bot's.
      if ('react' in content || 'delete' in content) {
        const key = 'react' in content ? content.react.key : content.delete;
        const text = 'react' in content ? (content.react.text ?? '') : '';
        (('react' in content ? reactions : deletions) as SeamMark[]).push({
          chatId: jid,
          id: key?.id ?? '',
          text,
        });
        return undefined;
      }
      const text = 'text' in content && typeof content.text === 'string' ? content.text : '';
      if (!jid.endsWith('@g.us') || seamOpts.toServer?.(text))
        return real(jid, content as never, options as never);
      const queued = failures.get(jid) ?? [];
      const at = queued.findIndex((f) => f.when?.(content) ?? true);
      if (at >= 0) throw queued.splice(at, 1)[0]?.err;
      const message =
        seamOpts.upload && !('text' in content)
          ? await generateWAMessageContent(content, { upload: seamOpts.upload })
          : undefined;
      sent.push({
        chatId: jid,
        id: options?.messageId ?? '',
        text,
        content,
        ...(message ? { message } : {}),
      });
      return undefined;
    }) as WhatsAppSocket['sendMessage'];
    const presence = sock.sendPresenceUpdate.bind(sock);
    sock.sendPresenceUpdate = (async (type: string, jid?: string) => {
      presences.push({ chatId: jid ?? '', type });
      return presence(type as never, jid);
    }) as WhatsAppSocket['sendPresenceUpdate'];
    sockets.push(sock);
    return sock;
  };
  return {
    factory,
    sent,
    presences,
    reactions,
    deletions,
    edits,
    /** The socket built last (the live one once connected). */
    socket: () => sockets.at(-1),
    /** Sockets built so far: one per connection the channel opened. */
    connections: () => sockets.length,
    /** The next send to the chat (of the content `when` picks, if given) fails with `err`. */
    failNext(chatId: string, err: Error, when?: (content: AnyMessageContent) => boolean) {
      failures.set(chatId, [...(failures.get(chatId) ?? []), { err, ...(when ? { when } : {}) }]);
    },
  };
}

const boom = (message: string, statusCode: number) =>
  Object.assign(new Error(message), { output: { statusCode } });
export const connectionClosed = () => boom('Connection Closed', 428);
export const notInGroup = () => boom('forbidden', 403);
