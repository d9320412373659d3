import fs from 'node:fs';
import path from 'node:path';
import type { proto } from '@whiskeysockets/baileys';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboundAttachment } from '../../../host/channels/channel.ts';
import {
  createWhatsAppChannel,
  messageIdFor,
  type WhatsAppChannel,
} from '../../../host/channels/whatsapp/whatsapp-channel.ts';
import { whatsappConfigSchema } from '../../../host/channels/whatsapp/whatsapp-config.ts';
import { mediaOf, whatsappMedia } from '../../../host/channels/whatsapp/whatsapp-media.ts';
import { createRecordingChannelHost } from '../../fakes/recording-channel-host.ts';
import { connectionClosed, groupSendsAtSeam, waMessage } from '../../fakes/whatsapp-fake.ts';
import { startWhatsAppWithMedia } from '../../fakes/whatsapp-media-server.ts';
import { PNG_1X1, pdfWithText, voiceNote } from '../../helpers/media-samples.ts';
import { waitFor } from '../../helpers/processes.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const GROUP = '120363000000000001@g.us';
const tempDir = useTempDirs('carapace-wa-send-file-');
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * The real WhatsApp adapter on a real Baileys socket (crabline), its group sends taken at the socket seam
 * (crabline closes the socket on a group send) where Baileys' own message builder encrypts the file and
 * uploads it to the fake media host: what was sent is then fetched and decrypted as a recipient would.
 */
async function setup() {
  const dir = tempDir();
  const { server, files, authDir } = await startWhatsAppWithMedia(dir, cleanups);
  const seam = groupSendsAtSeam(undefined, { upload: files.upload });
  const rec = createRecordingChannelHost();
  const channel: WhatsAppChannel = createWhatsAppChannel({
    config: whatsappConfigSchema.parse({ websocket_url: server.url }),
    dataDir: authDir,
    logger: pino({ level: 'silent' }),
    makeSocket: seam.factory,
    sendWaitMs: 5_000,
  });
  cleanups.push(() => channel.stop());
  await channel.start(rec.host);
  await waitFor('connected', () => channel.status().state === 'connected');
  /** The approved copy the outbox hands the adapter. */
  const attachment = (bytes: Buffer, a: Omit<OutboundAttachment, 'path'>): OutboundAttachment => {
    const file = path.join(dir, a.fileName);
    fs.writeFileSync(file, bytes);
    return { ...a, path: file };
  };
  const piece = (key: string, file: OutboundAttachment, text = '') => ({
    chatId: GROUP,
    text,
    idempotencyKey: key,
    sendKey: `install-1:${key}`,
    attachment: file,
  });
  /** The file a sent message carries, fetched and decrypted through the inbound download. */
  const received = async (message: proto.IMessage | undefined) => {
    const part = mediaOf(message ?? undefined);
    if (!part) throw new Error('the sent message carries no file');
    return {
      part,
      bytes: Buffer.from(
        await whatsappMedia(part.spec, '127.0.0.1').download(1 << 24, AbortSignal.timeout(10_000)),
      ),
    };
  };
  return { channel, seam, rec, attachment, piece, received };
}

describe('files out on WhatsApp (real Baileys message builder, socket seam, fake media host)', () => {
  it('sends a photo and a document as WhatsApp image and document messages a recipient can open', async () => {
    const t = await setup();
    const png = t.attachment(PNG_1X1, { fileName: 'chart.png', mime: 'image/png', kind: 'photo' });
    const photo = await t.channel.send(t.piece('run:1:1#file', png, 'the **chart**'));
    expect(photo).toEqual({ kind: 'delivered', platformIds: [messageIdFor('install-1:run:1:1#file')] });
    const pdf = pdfWithText('Quarterly report');
    const doc = t.attachment(pdf, { fileName: 'report.pdf', mime: 'application/pdf', kind: 'document' });
    await t.channel.send(t.piece('run:1:2#file', doc));
    const [sentPhoto, sentDoc] = t.seam.sent;
    // The caption is written as WhatsApp writes bold.
    expect(sentPhoto?.message?.imageMessage).toMatchObject({ mimetype: 'image/png', caption: 'the *chart*' });
    expect((await t.received(sentPhoto?.message)).bytes).toEqual(PNG_1X1);
    expect(sentDoc?.message?.documentMessage).toMatchObject({
      mimetype: 'application/pdf',
      fileName: 'report.pdf',
    });
    const got = await t.received(sentDoc?.message);
    expect(got.bytes).toEqual(pdf);
    expect(got.part.spec).toMatchObject({ kind: 'document', fileName: 'report.pdf' });
  });

  it('sends a voice note as push-to-talk audio, and its text as a message of its own under a second stable id', async () => {
    const t = await setup();
    const ogg = voiceNote('your reminder');
    const voice = t.attachment(ogg, {
      fileName: 'reminder.ogg',
      mime: 'audio/ogg; codecs=opus',
      kind: 'voice',
    });
    const outcome = await t.channel.send(t.piece('run:2:1#file', voice, 'a reminder'));
    const key = 'install-1:run:2:1#file';
    expect(outcome).toEqual({
      kind: 'delivered',
      platformIds: [messageIdFor(key), messageIdFor(`${key}#1`)],
    });
    const [audio, text] = t.seam.sent;
    expect(audio?.message?.audioMessage).toMatchObject({ ptt: true, mimetype: 'audio/ogg; codecs=opus' });
    expect((await t.received(audio?.message)).part.spec.kind).toBe('voice');
    expect((await t.received(audio?.message)).bytes).toEqual(ogg);
    expect(text).toMatchObject({ id: messageIdFor(`${key}#1`), text: 'a reminder' });
  });

  it('retries a failed file send under the same id, and never takes its own echo as input', async () => {
    const t = await setup();
    const png = t.attachment(PNG_1X1, { fileName: 'p.png', mime: 'image/png', kind: 'photo' });
    t.seam.failNext(GROUP, connectionClosed());
    const first = await t.channel.send(t.piece('run:3:1#file', png));
    expect(first.kind).toBe('retry');
    expect(t.seam.sent).toEqual([]);
    const again = await t.channel.send(t.piece('run:3:1#file', png));
    const id = messageIdFor('install-1:run:3:1#file');
    expect(again).toEqual({ kind: 'delivered', platformIds: [id] });
    expect(t.seam.sent.map((s) => s.id)).toEqual([id]);
    // Baileys echoes the sent image as a fromMe upsert under its id: not a message from anyone.
    t.channel.socket()?.ev.emit('messages.upsert', {
      type: 'append',
      messages: [waMessage({ id, remoteJid: GROUP, fromMe: true, message: t.seam.sent[0]?.message ?? {} })],
    });
    t.channel.socket()?.ev.emit('messages.upsert', {
      type: 'notify',
      messages: [
        waMessage({
          id: 'AFTER1',
          remoteJid: GROUP,
          participant: '15551234567@s.whatsapp.net',
          text: 'after',
        }),
      ],
    });
    await waitFor('the marker stored', () => t.rec.messages.some((m) => m.externalId === 'AFTER1'));
    expect(t.rec.messages.map((m) => m.externalId)).toEqual(['AFTER1']);
  });

  it('dead-letters a piece whose approved copy is gone, without touching the socket', async () => {
    const t = await setup();
    const gone = {
      path: '/nonexistent/carapace/p.png',
      fileName: 'p.png',
      mime: 'image/png',
      kind: 'photo' as const,
    };
    const outcome = await t.channel.send(t.piece('run:4:1#file', gone));
    expect(outcome).toMatchObject({ kind: 'permanent', reason: expect.stringMatching(/cannot be read/) });
    expect(t.seam.sent).toEqual([]);
  });
});
