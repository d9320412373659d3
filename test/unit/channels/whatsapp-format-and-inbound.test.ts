import { generateWAMessageContent } from '@whiskeysockets/baileys';
import { describe, expect, it } from 'vitest';
import { translateInbound, type InboundContext } from '../../../host/channels/whatsapp/inbound-message.ts';
import { markdownToWhatsApp } from '../../../host/channels/whatsapp/whatsapp-markdown.ts';
import { waMessage } from '../../fakes/whatsapp-fake.ts';

describe('markdownToWhatsApp', () => {
  it.each([
    ['**bold** and __also__', '*bold* and *also*'],
    ['*italic* and _italic_', '_italic_ and _italic_'],
    ['~~gone~~', '~gone~'],
    ['## A *heading*', '*A heading*'],
    [
      'see [the docs](https://x.example/d) or <https://y.example>',
      'see the docs (https://x.example/d) or https://y.example',
    ],
    ['[https://a.example](https://a.example)', 'https://a.example'],
    ['* one\n* two', '- one\n- two'],
    ['keep `**code**` as is', 'keep `**code**` as is'],
    ['```ts\nconst a = **b**;\n```', '```\nconst a = **b**;\n```'],
    ['plain text, 2 * 3 = 6', 'plain text, 2 * 3 = 6'],
  ])('%j → %j', (input, output) => {
    expect(markdownToWhatsApp(input)).toBe(output);
  });
});

const SELF = { phone: '15550000000@s.whatsapp.net', lid: '987654321@lid' };
const GROUP = '120363000000000001@g.us';
const ctx = (over: Partial<InboundContext> = {}): InboundContext => ({
  self: SELF,
  isOwnMessage: () => false,
  groupTitle: () => 'Family',
  phoneForLid: () => undefined,
  ...over,
});
const ingest = (d: ReturnType<typeof translateInbound>) => {
  if (d.kind !== 'ingest') throw new Error(`skipped: ${d.reason}`);
  return d.message;
};

describe('translateInbound', () => {
  it('reads a group message with its sender, name and title', () => {
    const m = ingest(
      translateInbound(
        waMessage({
          id: 'A',
          remoteJid: GROUP,
          participant: '15551234567:2@s.whatsapp.net',
          pushName: 'Alice',
          text: 'hi',
        }),
        ctx(),
      ),
    );
    expect(m).toMatchObject({
      channel: 'whatsapp',
      chatId: GROUP,
      chatTitle: 'Family',
      externalId: 'A',
      senderId: '15551234567@s.whatsapp.net',
      senderName: 'Alice',
      text: 'hi',
      fromOwner: false,
    });
  });

  it('prefers the phone number of a LID sender, from participantAlt or the LID map, and keeps an unmapped LID', () => {
    const alt = translateInbound(
      waMessage({
        id: 'A',
        remoteJid: GROUP,
        participant: '111@lid',
        participantAlt: '15551234567@s.whatsapp.net',
        text: 'x',
      }),
      ctx(),
    );
    expect(ingest(alt).senderId).toBe('15551234567@s.whatsapp.net');
    const mapped = translateInbound(
      waMessage({ id: 'B', remoteJid: GROUP, participant: '111:3@lid', text: 'x' }),
      ctx({ phoneForLid: (lid) => (lid === '111@lid' ? '15557654321:0@s.whatsapp.net' : undefined) }),
    );
    expect(ingest(mapped).senderId).toBe('15557654321@s.whatsapp.net');
    const unmapped = translateInbound(
      waMessage({ id: 'C', remoteJid: GROUP, participant: '222@lid', text: 'x' }),
      ctx(),
    );
    expect(ingest(unmapped).senderId).toBe('222@lid');
  });

  it('sees mentions of the bot by phone JID or LID, and replies only to ids the host sent', () => {
    const own = (_chat: string, id: string) => id === 'SENT1';
    const byLid = waMessage({
      id: 'A',
      remoteJid: GROUP,
      participant: '1@lid',
      text: 'x',
      mentionedJid: ['987654321@lid'],
    });
    const byPhone = waMessage({
      id: 'B',
      remoteJid: GROUP,
      participant: '1@lid',
      text: 'x',
      mentionedJid: ['15550000000@s.whatsapp.net'],
    });
    const other = waMessage({
      id: 'C',
      remoteJid: GROUP,
      participant: '1@lid',
      text: 'x',
      mentionedJid: ['2@lid'],
    });
    const reply = waMessage({
      id: 'D',
      remoteJid: GROUP,
      participant: '1@lid',
      text: 'x',
      quotedId: 'SENT1',
    });
    const notOurs = waMessage({
      id: 'E',
      remoteJid: GROUP,
      participant: '1@lid',
      text: 'x',
      quotedId: 'SOMEONE',
    });
    expect([byLid, byPhone, other].map((m) => ingest(translateInbound(m, ctx())).mentionsBot)).toEqual([
      true,
      true,
      false,
    ]);
    expect(
      [reply, notOurs].map((m) => ingest(translateInbound(m, ctx({ isOwnMessage: own }))).repliesToBot),
    ).toEqual([true, false]);
  });

  it('takes the self-chat under the phone JID or the LID as the owner’s admin chat, one chat id for both', () => {
    const phone = ingest(
      translateInbound(
        waMessage({ id: 'A', remoteJid: '15550000000@s.whatsapp.net', fromMe: true, text: 'pending' }),
        ctx(),
      ),
    );
    const lid = ingest(
      translateInbound(
        waMessage({ id: 'B', remoteJid: '987654321@lid', fromMe: true, text: 'pending' }),
        ctx(),
      ),
    );
    for (const m of [phone, lid]) {
      expect(m).toMatchObject({ chatId: SELF.phone, senderId: SELF.phone, fromOwner: true });
      expect(m.chatTitle).toBeUndefined();
    }
  });

  it('never takes the bot’s own sends, anyone else in the self-chat, or private chats', () => {
    const own = (_chat: string, id: string) => id === 'MINE';
    const cases = [
      waMessage({ id: 'MINE', remoteJid: '987654321@lid', fromMe: true, text: 'the bot’s reply' }),
      waMessage({ id: 'MINE', remoteJid: GROUP, fromMe: true, text: 'the bot’s reply in a group' }),
      waMessage({ id: 'X', remoteJid: '15550000000@s.whatsapp.net', fromMe: false, text: 'approve abc' }),
      waMessage({ id: 'Y', remoteJid: '15551234567@s.whatsapp.net', text: 'a stranger' }),
      waMessage({
        id: 'Z',
        remoteJid: '15551234567@s.whatsapp.net',
        fromMe: true,
        text: 'the owner to a friend',
      }),
      waMessage({ id: 'S', remoteJid: 'status@broadcast', participant: '1@lid', text: 'status' }),
      // The sender's other id is not the chat: the owner writing to someone carries the owner's id there.
      waMessage({
        id: 'C',
        remoteJid: '5@lid',
        remoteJidAlt: '15550000000@s.whatsapp.net',
        fromMe: true,
        text: 'pending',
      }),
    ];
    expect(cases.map((m) => translateInbound(m, ctx({ isOwnMessage: own })).kind)).toEqual(
      Array(7).fill('skip'),
    );
  });

  it('treats the owner’s account writing in a group as a member', () => {
    const m = ingest(
      translateInbound(waMessage({ id: 'A', remoteJid: GROUP, fromMe: true, text: 'approve abc234' }), ctx()),
    );
    expect(m).toMatchObject({ senderId: SELF.phone, fromOwner: false });
  });

  it('hands a file to the host with its caption as the text; names what is not a file; skips reactions and protocol messages', () => {
    const decide = (message: object) =>
      translateInbound(waMessage({ id: 'A', remoteJid: GROUP, participant: '1@lid', message }), ctx());
    const text = (message: object) => {
      const d = decide(message);
      return d.kind === 'ingest' ? d.message.text : undefined;
    };
    const media = (message: object) => {
      const d = decide(message);
      return d.kind === 'ingest' ? d.media : undefined;
    };
    expect(text({ imageMessage: { caption: 'look' } })).toBe('look');
    expect(media({ imageMessage: { caption: 'look', fileLength: 2048 } })).toMatchObject({
      kind: 'photo',
      keyType: 'image',
      declaredBytes: 2048,
    });
    expect(text({ audioMessage: { ptt: true } })).toBe('');
    expect(media({ audioMessage: { ptt: true, seconds: 4 } })).toMatchObject({
      kind: 'voice',
      durationSec: 4,
    });
    expect(media({ audioMessage: { ptt: false } })).toMatchObject({ kind: 'audio', keyType: 'audio' });
    const doc = {
      documentWithCaptionMessage: { message: { documentMessage: { fileName: 'r.pdf', caption: 'read' } } },
    };
    expect(text(doc)).toBe('read');
    expect(media(doc)).toMatchObject({ kind: 'document', fileName: 'r.pdf' });
    expect(media({ videoMessage: { gifPlayback: true } })).toMatchObject({ kind: 'animation' });
    expect(media({ ptvMessage: {} })).toMatchObject({ kind: 'video_note', keyType: 'ptv' });
    expect(text({ stickerMessage: {} })).toBe('[sticker]');
    expect(media({ stickerMessage: {} })).toBeUndefined();
    // A caption's mention of the bot is a mention, as in a text.
    expect(decide({ imageMessage: { contextInfo: { mentionedJid: [SELF.phone] } } })).toMatchObject({
      message: { mentionsBot: true },
    });
    expect(text({ ephemeralMessage: { message: { extendedTextMessage: { text: 'vanishing' } } } })).toBe(
      'vanishing',
    );
    expect(text({ reactionMessage: { text: '👍' } })).toBeUndefined();
    expect(text({ protocolMessage: { type: 0 } })).toBeUndefined();
  });

  it('never takes an edit as a new message: not the echo of the host’s streamed draft, not the owner’s own edit', async () => {
    // Built as Baileys builds the host's editText (and the owner's phone an edit): a protocol message
    // naming the edited message, the new text inside.
    const edit = await generateWAMessageContent(
      { text: 'approve abc234', edit: { remoteJid: SELF.phone, id: 'SENT1', fromMe: true } },
      { upload: () => Promise.reject(new Error('no upload')) },
    );
    expect(edit.protocolMessage?.editedMessage?.extendedTextMessage?.text).toBe('approve abc234');
    const inSelfChat = translateInbound(
      waMessage({ id: 'E1', remoteJid: SELF.phone, fromMe: true, message: edit }),
      ctx(),
    );
    expect(inSelfChat).toMatchObject({ kind: 'skip' });
    const inGroup = translateInbound(
      waMessage({ id: 'E2', remoteJid: GROUP, participant: '1@lid', message: edit }),
      ctx(),
    );
    expect(inGroup).toMatchObject({ kind: 'skip' });
  });
});
