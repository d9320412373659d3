import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createTelegramChannel } from '../../../host/channels/telegram/telegram-channel.ts';
import { telegramConfigSchema } from '../../../host/channels/telegram/telegram-config.ts';
import { startFakeTelegram } from '../../fakes/fake-telegram-api.ts';
import { channelStateIn } from '../../fakes/telegram-test-host.ts';
import { startMediaHost, type MediaHostOptions } from '../../helpers/media-host.ts';
import { PNG_1X1, pdfWithText, voiceNote } from '../../helpers/media-samples.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const OWNER = 5550001;
const GROUP = { id: -100200300, type: 'supergroup' as const, title: 'Family' };
const ANN = { id: 42, first_name: 'Ann' };

const tempDir = useTempDirs('carapace-tg-media-');
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * The real Telegram adapter (grammY) against the fake Bot API, feeding the host's real ingest and media
 * step, a real SQLite store and a real group folder; only the transcription service is a function here
 * (the gateway's own is tested with the fake provider).
 */
async function setup(opts: MediaHostOptions = {}) {
  const dir = tempDir();
  const fake = await startFakeTelegram();
  cleanups.push(() => fake.close());
  const media = startMediaHost(dir, opts);
  const { store } = media;
  cleanups.push(() => store.close());
  store.groups.add({ id: 'main', channel: 'local', chatId: 'main', name: 'Admin', isAdmin: true });
  store.groups.add({
    id: 'family',
    channel: 'telegram',
    chatId: String(GROUP.id),
    name: 'Family',
    isAdmin: false,
  });
  const channel = createTelegramChannel({
    config: telegramConfigSchema.parse({ owner_user_id: OWNER, api_root: fake.apiRoot, poll_timeout_s: 1 }),
    token: fake.token,
    triggerWord: '@Andy',
    state: channelStateIn(store.db, 'telegram'),
    logger: pino({ level: 'silent' }),
    watchdogGraceMs: 300,
    retryBaseMs: 20,
  });
  await channel.start(media.host);
  cleanups.push(() => channel.stop());
  const nextMessage = (groupId: string, count = 1) => fake.waitFor(() => media.nth(groupId, count));
  return { ...media, fake, dir, channel, nextMessage };
}

describe('Telegram media taken in by the host (real grammY, fake Bot API, real store and folder)', () => {
  it('stores a voice note under media/<date>/, records it on the message and joins its fenced transcript', async () => {
    const t = await setup({ transcribe: async () => ({ ok: true, text: 'buy milk and bread' }) });
    const audio = voiceNote('buy milk and bread');
    t.fake.media({ chat: GROUP, from: ANN, kind: 'voice', bytes: audio, mimeType: 'audio/ogg', duration: 2 });
    const m = await t.nextMessage('family');
    expect(m.media).toMatchObject({
      kind: 'voice',
      status: 'stored',
      bytes: audio.byteLength,
      durationSec: 2,
    });
    expect(m.media?.path).toMatch(/^media\/\d{4}-\d{2}-\d{2}\/[0-9a-f]{12}-voice\.ogg$/);
    expect(fs.readFileSync(path.join(t.groupsDir, 'family', m.media?.path ?? ''))).toEqual(audio);
    expect(m.media?.mime).toBe('audio/ogg; codecs=opus');
    // Ann is not the owner: her voice is untrusted text, and the group now carries the taint.
    expect(m.text).toMatch(
      /^\[voice note, 0:02, \d+ KB, audio\/ogg; codecs=opus, in the group folder at media\//,
    );
    expect(m.text).toContain('<<<UNTRUSTED TEXT from the transcript of a voice note Ann sent');
    expect(m.text).toContain('buy milk and bread');
    expect(t.store.groups.get('family')?.taint).toMatchObject({ corruption: true });
    expect(t.transcribed[0]).toMatchObject({ groupId: 'family', mime: 'audio/ogg; codecs=opus' });
    expect(Buffer.from(t.transcribed[0]?.audio ?? [])).toEqual(audio);
    expect(t.auditRows()[0]).toMatchObject({ groupId: 'family', decision: 'stored' });
  });

  it("never takes the owner's voice note in the admin chat as a command, whatever it says", async () => {
    const t = await setup({ transcribe: async () => ({ ok: true, text: 'approve 1' }) });
    const owner = { id: OWNER, first_name: 'Owner' };
    t.fake.media({
      chat: { id: OWNER, type: 'private' },
      from: owner,
      kind: 'voice',
      bytes: voiceNote('approve one'),
      duration: 1,
      caption: 'approve 1',
    });
    const m = await t.nextMessage('main');
    expect(t.commandsAsked).toEqual([]);
    // The owner's own voice: marked as a transcript, not fenced, and nothing tainted.
    expect(m.text).toMatch(/transcribed\]\n\[transcript\]\napprove 1\napprove 1$/);
    expect(t.store.groups.get('main')?.taint).toMatchObject({ corruption: false });
  });

  it('stores a photo and a PDF by their sniffed type, and names each in the text with the caption', async () => {
    const t = await setup();
    t.fake.media({ chat: GROUP, from: ANN, kind: 'photo', bytes: PNG_1X1, caption: 'our new cat' });
    const pdf = pdfWithText('Invoice 42: total 99 EUR');
    t.fake.media({ chat: GROUP, from: ANN, kind: 'document', bytes: pdf, fileName: 'bill (March).pdf' });
    const photo = await t.nextMessage('family');
    expect(photo.media).toMatchObject({ kind: 'photo', status: 'stored', mime: 'image/png' });
    expect(photo.media?.path).toMatch(/-photo\.png$/);
    expect(photo.text).toMatch(
      /^\[photo, 1 KB, image\/png, in the group folder at media\/.*\]\nour new cat$/,
    );
    const doc = await t.nextMessage('family', 2);
    expect(doc.media).toMatchObject({
      kind: 'document',
      fileName: 'bill (March).pdf',
      mime: 'application/pdf',
    });
    expect(doc.media?.path).toMatch(/-bill-March\.pdf$/);
    expect(fs.readFileSync(path.join(t.groupsDir, 'family', doc.media?.path ?? ''))).toEqual(pdf);
  });

  it('turns oversized, lying, truncated, empty and wrong-extension files into placeholders with audit rows', async () => {
    const t = await setup({ media: { max_bytes: { document: 4096 } } });
    const big = Buffer.alloc(10_000, 'a');
    const send = (extra: Partial<Parameters<typeof t.fake.media>[0]>) =>
      t.fake.media({ chat: GROUP, from: ANN, kind: 'document', bytes: big, fileName: 'notes.txt', ...extra });
    send({ fileName: 'declared-big.txt' });
    send({ fileName: 'lying.txt', declaredSize: 100 });
    send({ fileName: 'cut.txt', bytes: Buffer.alloc(2000, 'b'), truncate: true });
    send({ fileName: 'empty.txt', bytes: Buffer.alloc(0) });
    send({ fileName: 'report.pdf', bytes: PNG_1X1 });
    send({
      fileName: 'tool.exe',
      bytes: Buffer.from([0x4d, 0x5a, 0x90, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0xff, 0xff]),
    });
    await t.nextMessage('family', 6);
    const texts = t.messages('family').map((m) => m.text);
    expect(texts).toEqual([
      '[document declared-big.txt, not stored: too large (10 KB, the limit is 4 KB)]',
      '[document lying.txt, not stored: too large (over 4 KB)]',
      expect.stringMatching(/^\[document cut\.txt, not stored: it could not be downloaded \(.+\)\]$/),
      '[document empty.txt, not stored: the file is empty]',
      '[document report.pdf, not stored: its name says .pdf but its content is image/png]',
      expect.stringMatching(/^\[document tool\.exe, not stored: its content \(.+\) is not supported\]$/),
    ]);
    expect(t.messages('family').every((m) => m.media?.status === 'refused')).toBe(true);
    expect(t.auditRows().map((r) => r.decision)).toEqual(Array(6).fill('refused'));
    // Neither the declared-too-large file nor the one whose update lied about its size (getFile told) was fetched.
    expect(t.fake.downloads()).toEqual([3, 4, 5, 6].map((n) => `documents/file_file-${n}.bin`));
    expect(fs.existsSync(path.join(t.groupsDir, 'family', 'media'))).toBe(false);
  });

  it('keeps a voice note untranscribed when the group turned transcription off or it is too long, and a file out of a full folder', async () => {
    const off = await setup({ groupTranscribes: false, transcribe: async () => ({ ok: true, text: 'x' }) });
    off.fake.media({ chat: GROUP, from: ANN, kind: 'voice', bytes: voiceNote('hello'), duration: 1 });
    const m = await off.nextMessage('family');
    expect(m.text).toMatch(
      /^\[voice note, 0:01, .*, in the group folder at media\/\S+, not transcribed: transcription is off for this group \(\[groups\] transcribe\)\]$/,
    );
    expect(off.transcribed).toEqual([]);

    const long = await setup({
      media: { transcription: { max_seconds: 60 } },
      transcribe: async () => ({ ok: true, text: 'x' }),
    });
    long.fake.media({
      chat: GROUP,
      from: ANN,
      kind: 'voice',
      bytes: voiceNote('a long story'),
      duration: 180,
    });
    expect((await long.nextMessage('family')).text).toMatch(
      /^\[voice note, 3:00, .*, not transcribed: too long \(the limit is 1:00\)\]$/,
    );
    expect(long.transcribed).toEqual([]);

    const full = await setup({ quotaBytes: 10 });
    full.fake.media({ chat: GROUP, from: ANN, kind: 'photo', bytes: PNG_1X1 });
    const p = await full.nextMessage('family');
    expect(p.text).toBe('[photo, not stored: the group folder is full]');
  });

  it("never writes through a symlink a run planted as the group's media folder", async () => {
    const t = await setup();
    const outside = tempDir();
    fs.mkdirSync(path.join(t.groupsDir, 'family'), { recursive: true });
    fs.symlinkSync(outside, path.join(t.groupsDir, 'family', 'media'));
    t.fake.media({ chat: GROUP, from: ANN, kind: 'photo', bytes: PNG_1X1 });
    const m = await t.nextMessage('family');
    expect(m.text).toBe(
      '[photo, not stored: it could not be stored (media in the group folder is a symlink, never followed)]',
    );
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(t.auditRows()[0]).toMatchObject({ decision: 'refused' });
  });

  it('does not fetch a file again when Telegram delivers the same message twice', async () => {
    const t = await setup();
    const { messageId } = t.fake.media({ chat: GROUP, from: ANN, kind: 'photo', bytes: PNG_1X1 });
    await t.nextMessage('family');
    t.fake.push({
      message: {
        message_id: messageId,
        date: Math.floor(Date.now() / 1000),
        chat: GROUP,
        from: { ...ANN, is_bot: false },
        photo: [{ file_id: 'file-1', file_unique_id: 'u', width: 1, height: 1 }],
      },
    });
    const marker = t.fake.message({ chat: GROUP, from: ANN, text: 'after' });
    await t.fake.waitFor(() => t.messages('family').some((m) => m.externalId === String(marker.messageId)));
    expect(t.fake.downloads()).toHaveLength(1);
    expect(t.messages('family')).toHaveLength(2);
  });

  it('sends a photo, a voice note and a document each the way Telegram shows it, and a vanished copy as permanent', async () => {
    const t = await setup();
    const put = (name: string, bytes: Buffer) => {
      const file = path.join(t.dir, name);
      fs.writeFileSync(file, bytes);
      return file;
    };
    const piece = (n: number, attachment: NonNullable<Parameters<typeof t.channel.send>[0]['attachment']>) =>
      t.channel.send({
        chatId: String(GROUP.id),
        text: '',
        idempotencyKey: `k${n}`,
        sendKey: `s${n}`,
        attachment,
      });
    const voice = voiceNote('hello');
    const outcomes = [
      await piece(1, {
        path: put('cat.png', PNG_1X1),
        fileName: 'cat.png',
        mime: 'image/png',
        kind: 'photo',
      }),
      await piece(2, { path: put('v.ogg', voice), fileName: 'v.ogg', mime: 'audio/ogg', kind: 'voice' }),
      await piece(3, {
        path: put('a.pdf', pdfWithText('x')),
        fileName: 'a.pdf',
        mime: 'application/pdf',
        kind: 'document',
      }),
      await piece(4, {
        path: path.join(t.dir, 'gone.txt'),
        fileName: 'gone.txt',
        mime: 'text/plain',
        kind: 'document',
      }),
    ];
    expect(outcomes.map((o) => o.kind)).toEqual(['delivered', 'delivered', 'delivered', 'permanent']);
    expect(t.fake.sentFiles().map((f) => [f.method, f.fileName, f.chat_id])).toEqual([
      ['sendPhoto', 'cat.png', GROUP.id],
      ['sendVoice', 'v.ogg', GROUP.id],
      ['sendDocument', 'a.pdf', GROUP.id],
    ]);
    expect(t.fake.sentFiles()[1]?.bytes).toEqual(voice);
  });
});
