/**
 * Registrations that could never work are refused, per channel, through the channel definitions: the
 * owner's admin chat (it already is the admin conversation) and chat kinds a channel never reads; and
 * `carapace chats` offers neither.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../../host/store/store.ts';
import { FAKE_SELF_JID, seedLinkedAuth } from '../../fakes/whatsapp-fake.ts';
import { runCli } from '../../helpers/run-cli.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
let configDir: string;
let dataDir: string;

const OWNER_TELEGRAM_ID = 4242;
const WA_GROUP = '120363000000000001@g.us';
const WA_STRANGER = '15559990001@s.whatsapp.net';

beforeEach(() => {
  const root = tempDir();
  configDir = path.join(root, 'config');
  dataDir = path.join(root, 'data');
  fs.mkdirSync(configDir);
  fs.writeFileSync(
    path.join(configDir, 'config.toml'),
    `[channels.telegram]\nowner_user_id = ${OWNER_TELEGRAM_ID}\n\n[channels.whatsapp]\n`,
  );
});

const cli = (...argv: string[]) => runCli({ configDir, dataDir }, argv);
const add = (channel: string, chat: string) =>
  cli('groups', 'add', 'candidate', '--channel', channel, '--chat', chat);
const linkWhatsApp = () => seedLinkedAuth(path.join(dataDir, 'channels', 'whatsapp'));

async function groupIds(): Promise<string[]> {
  const list = await cli('groups', 'list', '--json');
  return (JSON.parse(list.stdout) as { id: string }[]).map((g) => g.id);
}

describe('groups add refuses the admin chat, exit 2, on every channel', () => {
  it('local: the console chat of the admin group', async () => {
    const r = await cli('groups', 'add', 'main', '--channel', 'local');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/local chat main already is the admin conversation/);
  });

  it('telegram: the owner’s private chat with the bot', async () => {
    const r = await add('telegram', String(OWNER_TELEGRAM_ID));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(`telegram chat ${OWNER_TELEGRAM_ID} already is the admin conversation`);
    expect(await groupIds()).toEqual(['main']);
  });

  it('whatsapp: the linked account’s own “Message yourself” chat', async () => {
    await linkWhatsApp();
    const r = await add('whatsapp', FAKE_SELF_JID);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(`whatsapp chat ${FAKE_SELF_JID} already is the admin conversation`);
    expect(await groupIds()).toEqual(['main']);
  });
});

describe('groups add refuses a chat kind the channel never reads, exit 2, with the reason', () => {
  it('whatsapp: a private chat, linked or not yet', async () => {
    const before = await add('whatsapp', WA_STRANGER);
    expect(before.code).toBe(2);
    expect(before.stderr).toMatch(/WhatsApp private chats are never read/);
    await linkWhatsApp();
    const after = await add('whatsapp', WA_STRANGER);
    expect(after.code).toBe(2);
    expect(after.stderr).toMatch(`whatsapp chat ${WA_STRANGER} cannot be a group`);
    expect(await groupIds()).toEqual(['main']);
  });

  it('telegram: someone else’s private chat with the bot', async () => {
    const r = await add('telegram', '777000');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/Telegram private chats are answered only for the owner/);
    expect(await groupIds()).toEqual(['main']);
  });

  it('whatsapp: any group while WhatsApp is not linked, saying to link first', async () => {
    const r = await add('whatsapp', WA_GROUP);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/WhatsApp is not linked yet: .*carapace whatsapp login/);
    expect(await groupIds()).toEqual(['main']);
  });

  it('still registers the groups of each channel', async () => {
    await linkWhatsApp();
    expect((await cli('groups', 'add', 'wa', '--channel', 'whatsapp', '--chat', WA_GROUP)).code).toBe(0);
    expect((await cli('groups', 'add', 'tg', '--channel', 'telegram', '--chat', '-100987')).code).toBe(0);
    expect((await cli('groups', 'add', 'fam', '--channel', 'local')).code).toBe(0);
    expect((await groupIds()).sort()).toEqual(['fam', 'main', 'tg', 'wa']);
  });
});

describe('carapace chats', () => {
  it('lists only chats that can be registered: never an admin chat or a chat the channel does not read', async () => {
    await linkWhatsApp();
    await cli('groups', 'list');
    const store = openStore({ file: path.join(dataDir, 'carapace.db') });
    try {
      store.chatsSeen.seen('whatsapp', FAKE_SELF_JID, 'Message yourself');
      store.chatsSeen.seen('whatsapp', WA_STRANGER, 'Eve');
      store.chatsSeen.seen('whatsapp', WA_GROUP, 'Family');
      store.chatsSeen.seen('telegram', String(OWNER_TELEGRAM_ID), 'Owner');
      store.chatsSeen.seen('telegram', '-100987', 'Team');
    } finally {
      store.close();
    }
    const r = await cli('chats', '--json');
    expect(r.code).toBe(0);
    const chats = JSON.parse(r.stdout) as { channel: string; chatId: string }[];
    expect(chats.map((c) => `${c.channel}:${c.chatId}`).sort()).toEqual([
      'telegram:-100987',
      `whatsapp:${WA_GROUP}`,
    ]);
    const text = await cli('chats');
    expect(text.stdout).not.toMatch(/Message yourself/);
  });
});
