import fs from 'node:fs';
import path from 'node:path';
import type { WAMessage } from '@whiskeysockets/baileys';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createWhatsAppChannel } from '../../../host/channels/whatsapp/whatsapp-channel.ts';
import { whatsappConfigSchema } from '../../../host/channels/whatsapp/whatsapp-config.ts';
import { FAKE_SELF_JID, waMessage } from '../../fakes/whatsapp-fake.ts';
import { startWhatsAppWithMedia } from '../../fakes/whatsapp-media-server.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';
import { startMediaHost, type MediaHostOptions } from '../../helpers/media-host.ts';
import { PNG_1X1, pdfWithText, voiceNote } from '../../helpers/media-samples.ts';
import { waitFor } from '../../helpers/processes.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const GROUP = '120363000000000001@g.us';
const ANN = '15551234567@s.whatsapp.net';

const tempDir = useTempDirs('carapace-wa-media-');
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * The real WhatsApp adapter on a real Baileys socket against crabline (which delivers a voice note through
 * the socket and serves its encrypted file), plus a fake media host for the kinds crabline cannot send,
 * feeding the host's real ingest and media step, a real SQLite store and a real group folder. Only the
 * transcription service is a function here (the gateway's own is tested with the fake provider's route).
 */
async function setup(
  opts: { media?: MediaHostOptions['media']; transcript?: string; clock?: MediaHostOptions['clock'] } = {},
) {
  const dir = tempDir();
  const { server, files, authDir } = await startWhatsAppWithMedia(dir, cleanups);
  const media = startMediaHost(dir, {
    ...opts,
    transcribe: async () => ({ ok: true, text: opts.transcript ?? 'buy milk and bread' }),
  });
  const { store } = media;
  cleanups.push(() => store.close());
  store.groups.add({ id: 'main', channel: 'whatsapp', chatId: FAKE_SELF_JID, name: 'Admin', isAdmin: true });
  store.groups.add({ id: 'family', channel: 'whatsapp', chatId: GROUP, name: 'Family', isAdmin: false });
  const channel = createWhatsAppChannel({
    config: whatsappConfigSchema.parse({ websocket_url: server.url }),
    dataDir: authDir,
    logger: pino({ level: 'silent' }),
    policy: { initialDelayMs: 200, maxDelayMs: 1_000 },
    sendWaitMs: 5_000,
  });
  cleanups.push(() => channel.stop());
  await channel.start(media.host);
  await waitFor('connected', () => channel.status().state === 'connected');
  /** Puts messages into the live Baileys socket's event stream, as it upserts what it decrypted. */
  const upsert = (...messages: WAMessage[]) => {
    const sock = channel.socket();
    if (!sock) throw new Error('no socket');
    sock.ev.emit('messages.upsert', { messages, type: 'notify' });
  };
  const nextMessage = (groupId: string, count = 1) =>
    waitFor(`${count} messages in ${groupId}`, () => media.nth(groupId, count));
  return { ...media, server, files, upsert, nextMessage };
}

const fromAnn = (id: string, message: WAMessage['message']) =>
  waMessage({ id, remoteJid: GROUP, participant: ANN, pushName: 'Ann', message });

describe('WhatsApp media taken in by the host (real Baileys, crabline, real store and folder)', () => {
  it("transcribes a member's voice note that crabline sent through the socket, fenced as a stranger's words", async () => {
    const t = await setup();
    const audio = voiceNote('buy milk and bread');
    await t.server.inject({
      chatJid: GROUP,
      senderJid: ANN,
      pushName: 'Ann',
      audio: { bytes: audio, mimeType: 'audio/ogg; codecs=opus', ptt: true },
    });
    const m = await t.nextMessage('family');
    expect(m.media).toMatchObject({
      kind: 'voice',
      status: 'stored',
      bytes: audio.byteLength,
      transcribed: true,
    });
    expect(m.media?.path).toMatch(/^media\/\d{4}-\d{2}-\d{2}\/[0-9a-f]{12}-voice\.ogg$/);
    expect(fs.readFileSync(path.join(t.groupsDir, 'family', m.media?.path ?? ''))).toEqual(audio);
    expect(Buffer.from(t.transcribed[0]?.audio ?? [])).toEqual(audio);
    expect(m.text).toContain('<<<UNTRUSTED TEXT from the transcript of a voice note Ann sent');
    expect(t.store.groups.get('family')?.taint).toMatchObject({ corruption: true });
    expect(t.auditRows()[0]).toMatchObject({ groupId: 'family', decision: 'stored' });
  });

  it("takes the owner's self-chat voice note as their words, and never as a command, whatever it says", async () => {
    const t = await setup({ transcript: 'approve 1' });
    const audio = voiceNote('approve one');
    const file = await t.files.put(audio, 'audio');
    t.upsert(
      waMessage({
        id: 'SELFVOICE1',
        remoteJid: FAKE_SELF_JID,
        fromMe: true,
        pushName: 'Me',
        message: { audioMessage: { ...file, ptt: true, seconds: 1, mimetype: 'audio/ogg; codecs=opus' } },
      }),
    );
    const m = await t.nextMessage('main');
    expect(t.commandsAsked).toEqual([]);
    expect(m.text).toMatch(/^\[voice note, 0:01, .*, transcribed\]\n\[transcript\]\napprove 1$/);
    expect(t.store.groups.get('main')?.taint).toMatchObject({ corruption: false });
  });

  it('stores a photo and a PDF by their sniffed type, with the caption as the text after the file line', async () => {
    const t = await setup();
    const photo = await t.files.put(PNG_1X1, 'image');
    const pdf = pdfWithText('Invoice 42: total 99 EUR');
    const doc = await t.files.put(pdf, 'document');
    t.upsert(
      fromAnn('IMG1', { imageMessage: { ...photo, mimetype: 'image/jpeg', caption: 'our new cat' } }),
      fromAnn('DOC1', {
        documentWithCaptionMessage: {
          message: {
            documentMessage: { ...doc, mimetype: 'application/pdf', fileName: 'bill.pdf', caption: 'March' },
          },
        },
      }),
    );
    const image = await t.nextMessage('family');
    expect(image.media).toMatchObject({ kind: 'photo', status: 'stored', mime: 'image/png' });
    expect(image.text).toMatch(
      /^\[photo, 1 KB, image\/png, in the group folder at media\/\S+-photo\.png\]\nour new cat$/,
    );
    const document = await t.nextMessage('family', 2);
    expect(document.media).toMatchObject({ kind: 'document', fileName: 'bill.pdf', mime: 'application/pdf' });
    expect(document.text).toMatch(/\nMarch$/);
    expect(fs.readFileSync(path.join(t.groupsDir, 'family', document.media?.path ?? ''))).toEqual(pdf);
  });

  it('turns oversized, lying, cut, altered and off-WhatsApp files into placeholders with audit rows', async () => {
    const t = await setup({ media: { max_bytes: { document: 4096 } } });
    const big = Buffer.alloc(10_000, 'a');
    const declaredBig = await t.files.put(big, 'document');
    const lying = await t.files.put(big, 'document');
    const cut = await t.files.put(Buffer.alloc(3000, 'b'), 'document', { cutAfter: 1000 });
    const altered = await t.files.put(Buffer.alloc(3000, 'c'), 'document');
    const doc = (id: string, fileName: string, fields: object) =>
      fromAnn(id, { documentMessage: { mimetype: 'text/plain', fileName, ...fields } });
    t.upsert(
      doc('D1', 'declared-big.txt', declaredBig),
      doc('D2', 'lying.txt', { ...lying, fileLength: 100 }),
      doc('D3', 'cut.txt', cut),
      // A media key that is not the file's: the MAC does not match.
      doc('D4', 'altered.txt', { ...altered, mediaKey: declaredBig.mediaKey }),
      doc('D5', 'metadata.txt', { ...altered, url: 'http://169.254.169.254/latest/meta-data' }),
      doc('D6', 'keyless.txt', { url: altered.url }),
    );
    await t.nextMessage('family', 6);
    expect(t.messages('family').map((m) => m.text)).toEqual([
      '[document declared-big.txt, not stored: too large (10 KB, the limit is 4 KB)]',
      '[document lying.txt, not stored: too large (over 4 KB)]',
      expect.stringMatching(/^\[document cut\.txt, not stored: it could not be downloaded \(.+\)\]$/),
      '[document altered.txt, not stored: it could not be downloaded (the file does not match its media key (cut short or altered))]',
      '[document metadata.txt, not stored: it could not be downloaded (the media address is not a WhatsApp media host (169.254.169.254))]',
      '[document keyless.txt, not stored: it could not be downloaded (the message carries no media key)]',
    ]);
    expect(t.auditRows().map((r) => r.decision)).toEqual(Array(6).fill('refused'));
    // Neither the file declared too large nor the ones without a WhatsApp address or a key was asked for.
    expect(t.files.requests()).toEqual([lying.url, cut.url, altered.url].map((u) => new URL(u).pathname));
    expect(fs.existsSync(path.join(t.groupsDir, 'family', 'media'))).toBe(false);
  });

  it('gives up on a download that stalls once [media] download_timeout_ms is over, and the chat goes on', async () => {
    const clock = fakeClock(1_000_000);
    // A minute on the fake clock: only its move ends the download within the test.
    const t = await setup({ media: { download_timeout_ms: 60_000 }, clock: clock.clock });
    const stalled = await t.files.put(Buffer.alloc(3000, 's'), 'document', { stallAfter: 1000 });
    t.upsert(
      fromAnn('S1', { documentMessage: { ...stalled, mimetype: 'text/plain', fileName: 'slow.txt' } }),
      waMessage({ id: 'S2', remoteJid: GROUP, participant: ANN, pushName: 'Ann', text: 'still there?' }),
    );
    // The deadline is armed before the request goes out; the file host has it once the download stalls.
    await waitFor('the stalled download requested', () =>
      t.files.requests().includes(new URL(stalled.url).pathname),
    );
    clock.advance(60_000);
    await t.nextMessage('family', 2);
    expect(t.messages('family').map((m) => m.text)).toEqual([
      expect.stringMatching(/^\[document slow\.txt, not stored: it could not be downloaded \(.*\)\]$/),
      'still there?',
    ]);
    expect(t.auditRows().map((r) => r.decision)).toEqual(['refused']);
  });

  it('follows a media host redirect only to a place it may fetch from', async () => {
    const t = await setup();
    const pdf = pdfWithText('moved');
    const real = await t.files.put(pdf, 'document');
    const moved = await t.files.put(pdf, 'document', { redirectTo: new URL(real.url).pathname });
    const away = await t.files.put(pdf, 'document', {
      redirectTo: 'http://169.254.169.254/latest/meta-data',
    });
    const doc = (id: string, fileName: string, fields: object) =>
      fromAnn(id, { documentMessage: { mimetype: 'application/pdf', fileName, ...fields } });
    t.upsert(
      doc('R1', 'moved.pdf', { ...real, url: moved.url }),
      doc('R2', 'away.pdf', { ...real, url: away.url }),
    );
    await t.nextMessage('family', 2);
    const [kept, refused] = t.messages('family');
    expect(kept?.media).toMatchObject({ status: 'stored', mime: 'application/pdf' });
    expect(refused?.text).toBe(
      '[document away.pdf, not stored: it could not be downloaded (the media address is not a WhatsApp media host (169.254.169.254))]',
    );
  });

  it("keeps a chat's messages in order behind a download, and names a video without fetching it", async () => {
    const t = await setup();
    const photo = await t.files.put(PNG_1X1, 'image');
    t.upsert(
      fromAnn('V1', { videoMessage: { ...photo, seconds: 5, mimetype: 'video/mp4' } }),
      fromAnn('P1', { imageMessage: { ...photo } }),
      waMessage({ id: 'T1', remoteJid: GROUP, participant: ANN, pushName: 'Ann', text: 'that was the cat' }),
    );
    await t.nextMessage('family', 3);
    expect(t.messages('family').map((m) => m.text)).toEqual([
      '[video, 0:05, not stored: video files are not supported]',
      expect.stringMatching(/^\[photo, 1 KB, image\/png, in the group folder at media\//),
      'that was the cat',
    ]);
    expect(t.files.requests()).toHaveLength(1);
  });
});
