import fs from 'node:fs';
import http from 'node:http';
import { z } from 'zod';
import {
  MediaTooLargeError,
  type Channel,
  type ChannelHost,
  type ChannelStatus,
  type InboundMessage,
  type SendOutcome,
} from '../../host/channels/channel.ts';

/** The fake platform's account of the owner: their user id, writing in their private chat with the bot. */
export const FAKE_OWNER = { userId: 'owner-1', chatId: 'dm-owner-1' };

/** What a test posts to the fake platform: one platform message, with the platform's own metadata. */
const platformMessage = z.object({
  chatId: z.string().min(1),
  externalId: z.string().min(1),
  text: z.string(),
  chatTitle: z.string().optional(),
  senderId: z.string().default('friend'),
  senderName: z.string().default('Friend'),
  /** Platform metadata: the bot is mentioned by an entity, not by text. */
  mentionsBot: z.boolean().default(false),
  /** The platform id of the message this one replies to. */
  replyTo: z.string().optional(),
  /** Platform metadata: the text was forwarded from this author (never the owner on this platform). */
  forwardedFrom: z.string().optional(),
  /** Platform metadata: someone else's words quoted with this message. */
  quoted: z.object({ text: z.string(), author: z.string() }).optional(),
  /**
   * Whose words the text and its quote are, as a real adapter's decoder (Telegram's `decideInbound`,
   * WhatsApp's `translateInbound`) decided from a platform update: then this fake decides nothing itself.
   */
  decoded: z
    .object({
      text: z.string(),
      origin: z.discriminatedUnion('kind', [
        z.object({ kind: z.literal('own') }),
        z.object({ kind: z.literal('forwarded'), author: z.string(), authorIsOwner: z.boolean() }),
      ]),
      quoted: z.object({ text: z.string(), author: z.string(), authorIsOwner: z.boolean() }).optional(),
      /** Whether the decoder saw the owner in their own chat with the bot, and the owner as the sender. */
      fromOwner: z.boolean().optional(),
      senderIsOwner: z.boolean().optional(),
    })
    .optional(),
  /** A file the message carries (its text is then the caption), as the platform declares it. */
  media: z
    .object({
      kind: z.enum(['voice', 'photo', 'document']),
      base64: z.string(),
      fileName: z.string().optional(),
      mime: z.string().optional(),
      durationSec: z.number().optional(),
    })
    .optional(),
});
export type PlatformMessage = z.input<typeof platformMessage>;

export interface SocketChannel extends Channel {
  /** The platform side, for tests that run the channel in-process. */
  platform: {
    /** The outcome of the next send to this chat (a transient error, a vanished or moved chat). */
    answerNext(chatId: string, outcome: Exclude<SendOutcome, { kind: 'delivered' }>): void;
    /** Every send to this chat of a text holding `marker` takes the connection down (a poison message). */
    dropsConnectionOn(chatId: string, marker: string): void;
    /** The connection drops (the channel reports `connecting`) and comes back (`connected`). */
    drop(): void;
    restore(): void;
    /** The platform logged the bot's session out (the owner has to link it again). */
    logOut(): void;
  };
}

/**
 * A chat platform stand-in: inbound messages arrive as HTTP posts on a Unix socket, deliveries are appended
 * to a JSONL file. The owner is attested from platform facts only (their user id in their private chat),
 * replies to the bot from the host's record of what it sent. A reply containing "[die-during-delivery]"
 * kills the whole process mid-delivery (once, remembered by a marker file), which is exactly a host crash
 * with a reply stored in the outbox but not yet confirmed.
 */
export function createSocketChannel(opts: {
  socketFile: string;
  deliveriesFile: string;
  dieMarker: string;
  name?: string;
}): SocketChannel {
  const name = opts.name ?? 'fake';
  let host: ChannelHost | undefined;
  let server: http.Server | undefined;
  let status: ChannelStatus = { state: 'stopped', reason: 'not started', since: new Date().toISOString() };
  const scripted: { chatId: string; outcome: Exclude<SendOutcome, { kind: 'delivered' }> }[] = [];
  const poison = new Map<string, string>();
  const setStatus = (state: ChannelStatus['state'], reason?: string) => {
    status = { state, ...(reason ? { reason } : {}), since: new Date().toISOString() };
    host?.onStatus(status);
  };
  let seq = 0;

  // A chat's messages are ingested in order, a file's download included, as the adapters' lanes do.
  const lanes = new Map<string, Promise<unknown>>();
  const receive = (raw: unknown): Promise<unknown> => {
    const m = platformMessage.parse(raw);
    const done = (lanes.get(m.chatId) ?? Promise.resolve()).then(() => ingestOne(m));
    lanes.set(
      m.chatId,
      done.catch(() => undefined),
    );
    return done;
  };
  const ingestOne = async (m: z.output<typeof platformMessage>) => {
    if (!host) return null;
    host.onChatSeen({ chatId: m.chatId, title: m.chatTitle ?? m.chatId });
    const message: InboundMessage = {
      channel: name,
      chatId: m.chatId,
      chatTitle: m.chatTitle,
      externalId: m.externalId,
      senderId: m.senderId,
      senderName: m.senderName,
      text: m.text,
      sentAt: new Date().toISOString(),
      mentionsBot: m.mentionsBot,
      repliesToBot: m.replyTo !== undefined && host.isOwnMessage(m.chatId, m.replyTo),
      fromOwner: m.senderId === FAKE_OWNER.userId && m.chatId === FAKE_OWNER.chatId,
      origin: m.forwardedFrom
        ? { kind: 'forwarded', author: m.forwardedFrom, authorIsOwner: false }
        : { kind: 'own' },
      ...(m.quoted ? { quoted: { ...m.quoted, authorIsOwner: false } } : {}),
      ...(m.decoded
        ? {
            text: m.decoded.text,
            origin: m.decoded.origin,
            ...(m.decoded.quoted ? { quoted: m.decoded.quoted } : {}),
            ...(m.decoded.fromOwner !== undefined ? { fromOwner: m.decoded.fromOwner } : {}),
            ...(m.decoded.senderIsOwner !== undefined ? { senderIsOwner: m.decoded.senderIsOwner } : {}),
          }
        : {}),
    };
    if (!m.media) return host.ingest(message);
    const bytes = Buffer.from(m.media.base64, 'base64');
    return host.ingestMedia({
      ...message,
      media: {
        kind: m.media.kind,
        ...(m.media.fileName ? { fileName: m.media.fileName } : {}),
        ...(m.media.mime ? { declaredMime: m.media.mime } : {}),
        ...(m.media.durationSec ? { durationSec: m.media.durationSec } : {}),
        declaredBytes: bytes.byteLength,
        download: async (maxBytes: number) => {
          if (bytes.byteLength > maxBytes) throw new MediaTooLargeError(maxBytes);
          return new Uint8Array(bytes);
        },
      },
    });
  };

  const channel: SocketChannel = {
    name,
    textLimit: 4096,
    async start(h) {
      host = h;
      setStatus('connecting');
      if (fs.existsSync(opts.socketFile)) fs.unlinkSync(opts.socketFile);
      server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const answer = (status: number, body: unknown) => {
            res.writeHead(status, { 'content-type': 'application/json' });
            res.end(JSON.stringify(body));
          };
          const failed = (err: unknown) => answer(400, { error: (err as Error).message });
          try {
            receive(JSON.parse(Buffer.concat(chunks).toString('utf8'))).then(
              (result) => answer(200, result),
              failed,
            );
          } catch (err) {
            failed(err);
          }
        });
      });
      await new Promise<void>((resolve) => server?.listen(opts.socketFile, resolve));
      setStatus('connected');
    },
    async stop() {
      server?.closeAllConnections();
      server?.close();
      setStatus('stopped', 'stopped by the host');
      host = undefined;
    },
    status: () => status,
    adminChatId: () => FAKE_OWNER.chatId,
    async send({ chatId, text, idempotencyKey, attachment }) {
      const at = scripted.findIndex((s) => s.chatId === chatId);
      if (at >= 0) return scripted.splice(at, 1)[0]!.outcome;
      if (status.state !== 'connected') return { kind: 'retry', reason: `the ${name} connection is down` };
      const marker = poison.get(chatId);
      if (marker !== undefined && text.includes(marker)) {
        return { kind: 'connection-lost', reason: `the ${name} server closed the connection on it` };
      }
      if (text.includes('[die-during-delivery]') && !fs.existsSync(opts.dieMarker)) {
        fs.writeFileSync(opts.dieMarker, String(process.pid));
        process.kill(process.pid, 'SIGKILL');
        await new Promise(() => undefined);
      }
      seq += 1;
      const platformId = `${name}-${process.pid}-${seq}`;
      fs.appendFileSync(
        opts.deliveriesFile,
        `${JSON.stringify({ chatId, text, key: idempotencyKey, platformId, pid: process.pid, ...(attachment ? { file: fileSeen(attachment.path, attachment.fileName) } : {}) })}\n`,
      );
      return { kind: 'delivered', platformIds: [platformId] };
    },
    async setTyping() {},
    platform: {
      answerNext(chatId, outcome) {
        scripted.push({ chatId, outcome });
      },
      dropsConnectionOn(chatId, marker) {
        poison.set(chatId, marker);
      },
      drop() {
        setStatus('connecting', 'the connection dropped; reconnecting');
      },
      restore() {
        setStatus('connected');
      },
      logOut() {
        setStatus('logged-out', `the ${name} session was logged out; link it again`);
      },
    },
  };
  return channel;
}

/** A sent file as the chat shows it: its name and bytes (base64, the first 64 KiB). */
function fileSeen(file: string, fileName: string): { fileName: string; size: number; base64: string } {
  const bytes = fs.readFileSync(file);
  return { fileName, size: bytes.byteLength, base64: bytes.subarray(0, 64 * 1024).toString('base64') };
}

/** One send as the fake platform recorded it. */
export interface SocketDelivery {
  chatId: string;
  text: string;
  key: string;
  platformId: string;
  file?: { fileName: string; size: number; base64: string };
}

/** What the fake platform shows in a chat: the deliveries file, in order. */
export function socketChannelDeliveries(deliveriesFile: string): SocketDelivery[] {
  if (!fs.existsSync(deliveriesFile)) return [];
  return fs
    .readFileSync(deliveriesFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as SocketDelivery);
}

export function postToSocketChannel(socketFile: string, body: PlatformMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = http.request(
      {
        socketPath: socketFile,
        method: 'POST',
        path: '/',
        headers: { 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
