import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rememberChatSeen } from '../../../host/channels/chat-seen.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
let store: Store | undefined;
afterEach(() => store?.close());

describe('rememberChatSeen', () => {
  it('keeps unregistered chats as candidates, never a registered group or the admin chat', () => {
    store = openStore({ file: path.join(tempDir(), 'carapace.db') });
    store.groups.add({ id: 'family', channel: 'telegram', chatId: '-100', name: 'Family', isAdmin: false });
    const telegram = { name: 'telegram', adminChatId: () => '42' };

    rememberChatSeen(store, telegram, { chatId: '-200', title: 'Book club' });
    rememberChatSeen(store, telegram, { chatId: '-100', title: 'Family' });
    rememberChatSeen(store, telegram, { chatId: '42', title: 'Owner' });
    // The same chat id on another channel is another chat.
    rememberChatSeen(
      store,
      { name: 'whatsapp', adminChatId: () => undefined },
      { chatId: '-100', title: 'Work' },
    );

    expect(
      store.chatsSeen
        .list()
        .map((c) => `${c.channel}:${c.chatId}:${c.title}`)
        .sort(),
    ).toEqual(['telegram:-200:Book club', 'whatsapp:-100:Work']);
  });
});
