import path from 'node:path';
import pino from 'pino';
import { newClientMessageId } from '../../host/channels/local/local-api.ts';
import { createLocalChannel, LOCAL_CHANNEL } from '../../host/channels/local/local-channel.ts';
import { createLocalClient } from '../../host/channels/local/local-client.ts';
import { localChannelDefinition } from '../../host/channels/local/local-definition.ts';
import { listenOnSocket } from '../../host/channels/local/socket-server.ts';
import { describeChannelConformance } from './channel-conformance.ts';

// The console's platform is the host's own socket: the owner posts, and sees replies on the event stream.
describeChannelConformance(
  'local console',
  async ({ store, events, dir }) => {
    store.groups.add({ id: 'main', channel: LOCAL_CHANNEL, chatId: 'main', name: 'Admin', isAdmin: true });
    const local = createLocalChannel({
      groups: store.groups,
      outbox: store.outbox,
      events,
      isBusy: () => false,
      capRefusal: () => undefined,
      ownerName: 'owner',
      logger: pino({ level: 'silent' }),
    });
    const socketFile = path.join(dir, 'console.sock');
    const server = await listenOnSocket(socketFile, local.routes);
    const client = createLocalClient(socketFile);
    const groupOf = (chatId: string) => store.groups.findByChat(LOCAL_CHANNEL, chatId)?.id ?? chatId;
    return {
      channel: local.channel,
      driver: {
        groupChatId: 'members-chat',
        async ownerWrites(text) {
          await client.postMessage({ group: 'main', text, clientMessageId: newClientMessageId() });
        },
        async received(chatId) {
          // The stream replays every delivered reply, then the group's state: read up to that, then leave.
          const texts: string[] = [];
          const done = new AbortController();
          await client.events(
            groupOf(chatId),
            0,
            (e) => {
              if (e.type === 'reply') texts.push(e.text);
              else done.abort();
            },
            done.signal,
          );
          return texts;
        },
        async killChat(chatId) {
          store.groups.remove(groupOf(chatId));
        },
        async close() {
          server.closeAllConnections();
          await new Promise<void>((resolve) => server.close(() => resolve()));
        },
      },
    };
  },
  { capabilities: localChannelDefinition.capabilities },
);
